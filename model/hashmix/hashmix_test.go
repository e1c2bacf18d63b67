package hashmix

import "testing"

// The values are pinned: feature IDs, partitions and initial rows depend on them.
func TestMix64Golden(t *testing.T) {
	for _, tc := range []struct{ in, want uint64 }{
		{0, 0},
		{1, 0x5692161d100b05e5},
		{0x9e3779b97f4a7c15, 0xe220a8397b1dcdaf},
	} {
		if got := Mix64(tc.in); got != tc.want {
			t.Errorf("Mix64(%#x) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func TestStream(t *testing.T) {
	a, b := NewStream(1, 2, 3), NewStream(1, 2, 3)
	c := NewStream(1, 2, 4)
	same, counts := 0, make([]int, 5)
	for range 10000 {
		x := a.Next()
		if x != b.Next() {
			t.Fatal("streams of the same key differ")
		}
		if x == c.Next() {
			same++
		}
		counts[c.IntN(5)]++
		if f := c.Float64(); f < 0 || f >= 1 {
			t.Fatalf("Float64 = %v", f)
		}
	}
	if same > 0 {
		t.Errorf("streams of different keys agree %d times", same)
	}
	for k, n := range counts {
		if n < 1800 || n > 2200 {
			t.Errorf("IntN(5) gave %d %d times of 10000", k, n)
		}
	}
}
