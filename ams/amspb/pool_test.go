package amspb

import "testing"

func TestBufferPool(t *testing.T) {
	var p BufferPool
	for _, n := range []int{0, 1, 255, 256, 257, 4096, 1 << 20, 3<<20 + 1} {
		b := p.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d) has length %d", n, len(*b))
		}
		if c := cap(*b); c < n || c&(c-1) != 0 {
			t.Fatalf("Get(%d) has capacity %d, want a power of two >= n", n, c)
		}
		p.Put(b)
		again := p.Get(n)
		if len(*again) != n {
			t.Fatalf("re-Get(%d) has length %d", n, len(*again))
		}
	}
	// A buffer that is not a pool tier is dropped, not reused.
	odd := make([]byte, 300)
	p.Put(&odd)
}
