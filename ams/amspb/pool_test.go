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

// TestBufferPoolKeepsAtMostPoolBytes puts back far more than PoolBytes of
// buffers of one tier, then takes as many: only PoolBytes of them come
// back; the rest were dropped for the garbage collector.
func TestBufferPoolKeepsAtMostPoolBytes(t *testing.T) {
	var p BufferPool
	const size = 1 << 20
	const n = 4 * PoolBytes / size
	put := map[*[]byte]bool{}
	bufs := make([]*[]byte, n)
	for i := range bufs {
		bufs[i] = p.Get(size)
	}
	for _, b := range bufs {
		put[b] = true
		p.Put(b)
	}
	if k := p.kept.Load(); k != PoolBytes {
		t.Fatalf("the pool keeps %d bytes after %d buffers of %d were put back, want PoolBytes (%d)", k, n, size, PoolBytes)
	}
	reused := 0
	for range n {
		if put[p.Get(size)] {
			reused++
		}
	}
	if want := PoolBytes / size; reused != want {
		t.Fatalf("%d of %d buffers put back were reused, want %d (PoolBytes)", reused, n, want)
	}
	if k := p.kept.Load(); k != 0 {
		t.Fatalf("the pool keeps %d bytes once its buffers were taken, want 0", k)
	}
}

// TestBufferPoolDropsHugeBuffers: a buffer above the largest tier is
// allocated for its use and never kept.
func TestBufferPoolDropsHugeBuffers(t *testing.T) {
	var p BufferPool
	const size = 1<<maxTier + 1
	b := p.Get(size)
	if len(*b) != size {
		t.Fatalf("Get(%d) has length %d", size, len(*b))
	}
	p.Put(b)
	if k := p.kept.Load(); k != 0 {
		t.Fatalf("the pool keeps %d bytes after a buffer of %d was put back, want 0", k, size)
	}
	if again := p.Get(size); again == b {
		t.Fatal("a buffer above the largest tier was reused")
	}
	small := p.Get(4096)
	p.Put(small)
	if again := p.Get(4096); again != small {
		t.Fatal("a buffer of a tier was not reused")
	}
}
