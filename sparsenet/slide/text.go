package slide

import "fmt"

// ParseKind returns the hash family named s: "dwta" or "simhash".
func ParseKind(s string) (Kind, error) {
	switch s {
	case "dwta":
		return KindDWTA, nil
	case "simhash":
		return KindSimHash, nil
	}
	return KindDefault, fmt.Errorf("%w: hash family %q is not dwta or simhash", ErrBadConfig, s)
}
