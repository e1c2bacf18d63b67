package ams

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"unsafe"
)

func TestPackFloatsRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 3, 1000} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*0.37 - 5
		}
		if n > 0 {
			v[0] = float32(math.Inf(-1))
		}
		b := PackFloats([]byte{9}, v)
		if len(b) != 1+4*n || b[0] != 9 {
			t.Fatalf("n=%d: packed %d bytes, prefix %v", n, len(b), b[:1])
		}
		got, err := UnpackFloats(nil, b[1:])
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if got[i] != v[i] {
				t.Fatalf("n=%d: value %d = %v, want %v", n, i, got[i], v[i])
			}
		}
		// Little-endian bytes on every machine.
		if n > 1 && binary.LittleEndian.Uint32(b[5:9]) != math.Float32bits(v[1]) {
			t.Fatalf("value 1 is not little-endian: %x", b[5:9])
		}
		if view, ok := FloatsView(PackFloats(nil, v)); ok {
			for i := range v {
				if view[i] != v[i] {
					t.Fatalf("view %d = %v, want %v", i, view[i], v[i])
				}
			}
		}
	}
	if _, err := UnpackFloats(nil, make([]byte, 5)); err == nil {
		t.Fatal("5 bytes unpacked without error")
	}
	if _, ok := FloatsView(make([]byte, 9)[1:]); ok {
		t.Fatal("a misaligned view was accepted")
	}
}

func TestPayloadViews(t *testing.T) {
	v := []float32{1.5, -2, 3.25}
	if got, err := UnpackFloats(nil, FloatsPayload(v)); err != nil || got[0] != 1.5 || got[2] != 3.25 {
		t.Fatalf("FloatsPayload round trip = %v, %v", got, err)
	}
	ids := []uint64{0, 1, 1 << 63}
	if got, err := UnpackIDs(nil, IDsPayload(ids)); err != nil || got[1] != 1 || got[2] != 1<<63 {
		t.Fatalf("IDsPayload round trip = %v, %v", got, err)
	}
	if FloatsPayload(nil) != nil && len(FloatsPayload(nil)) != 0 {
		t.Fatal("empty payload is not empty")
	}
}

// IDsView reads packed ids in place: the same ids as UnpackIDs, and a
// misaligned or ragged payload is refused for the caller to copy.
func TestIDsView(t *testing.T) {
	ids := []uint64{0, 1, 1<<64 - 1, 0x0123456789abcdef}
	b := PackIDs(nil, ids)
	if view, ok := IDsView(b); nativeLittle && (!ok || !slices.Equal(view, ids)) {
		t.Fatalf("IDsView = %v, %v, want %v", view, ok, ids)
	}
	if view, ok := IDsView(nil); nativeLittle && (!ok || len(view) != 0) {
		t.Fatalf("IDsView(nil) = %v, %v, want an empty view", view, ok)
	}
	odd := make([]byte, 32)
	off := 1
	if uintptr(unsafe.Pointer(&odd[off]))%8 == 0 {
		off = 2
	}
	if _, ok := IDsView(odd[off : off+16]); ok {
		t.Fatal("a misaligned view was accepted")
	}
	if _, ok := IDsView(odd[:12]); ok {
		t.Fatal("12 bytes were viewed as ids")
	}
}
