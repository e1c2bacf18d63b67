package prefetch

import "testing"

// The hints must not fault or change memory, for any length and alignment,
// including slices ending at the last byte of their array.
func TestHintsChangeNothing(t *testing.T) {
	buf := make([]float32, 1000)
	for i := range buf {
		buf[i] = float32(i)
	}
	for lo := 0; lo < 40; lo++ {
		for hi := lo; hi <= len(buf); hi += 37 {
			Float32s(buf[lo:hi])
		}
		Float32s(buf[lo:])
		Float32(&buf[lo])
	}
	var u uint32 = 7
	Uint32(&u)
	Float32s(nil)
	Bytes(nil)
	raw := make([]byte, 300)
	for lo := range 70 {
		Bytes(raw[lo:])
	}
	var i64 int64 = 9
	Of(&i64)
	if u != 7 || i64 != 9 || raw[0] != 0 {
		t.Fatal("a hint changed memory")
	}
	for i, v := range buf {
		if v != float32(i) {
			t.Fatalf("buf[%d] = %v after prefetching", i, v)
		}
	}
	if u != 7 {
		t.Fatal("Uint32 changed its target")
	}
}

func BenchmarkFloat32s_512B(b *testing.B) {
	buf := make([]float32, 128)
	for i := 0; i < b.N; i++ {
		Float32s(buf)
	}
}
