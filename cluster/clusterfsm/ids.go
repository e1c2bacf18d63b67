package clusterfsm

import "strings"

// CompareIDs orders member ids with runs of digits compared as numbers, so
// that "ams-2" < "ams-10"; ids equal that way ("a01", "a1") fall back to
// bytes. It is also the order of package scheduler's shard map.
func CompareIDs(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := i, j
			for ei < len(a) && isDigit(a[ei]) {
				ei++
			}
			for ej < len(b) && isDigit(b[ej]) {
				ej++
			}
			na := strings.TrimLeft(a[i:ei], "0")
			nb := strings.TrimLeft(b[j:ej], "0")
			if len(na) != len(nb) {
				return len(na) - len(nb)
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			return int(a[i]) - int(b[j])
		}
		i++
		j++
	}
	if c := (len(a) - i) - (len(b) - j); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
