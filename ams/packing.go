package ams

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// DefaultVersion is the cluster version of a cluster that was never
// restored; every request carries the version it was made for.
const DefaultVersion = 1

// nativeLittle is true on little-endian machines, where a packed float32
// payload has the same bytes as the []float32 in memory, so packing is a
// memmove and a suitably aligned payload can be read in place.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// floatBytes views v as its bytes. Only meaningful when nativeLittle.
func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// FloatsView returns b viewed as float32s when the machine is little-endian
// and b is 4-byte aligned with a length that is a multiple of 4; otherwise
// ok is false and the caller must copy (UnpackFloats). The view aliases b.
func FloatsView(b []byte) (v []float32, ok bool) { return viewOf[float32](b) }

// IDsView returns b viewed as uint64 ids when the machine is little-endian
// and b is 8-byte aligned with a length that is a multiple of 8; otherwise
// ok is false and the caller must copy (UnpackIDs). The view aliases b.
func IDsView(b []byte) (ids []uint64, ok bool) { return viewOf[uint64](b) }

// viewOf views b as little-endian Ts in place: FloatsView and IDsView.
func viewOf[T float32 | uint64](b []byte) ([]T, bool) {
	size := int(unsafe.Sizeof(*new(T)))
	if !nativeLittle || len(b)%size != 0 {
		return nil, false
	}
	if len(b) == 0 {
		return []T{}, true
	}
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(size) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size), true
}

// PackFloats encodes v as packed little-endian float32s, appending to dst.
func PackFloats(dst []byte, v []float32) []byte {
	off := len(dst)
	need := off + 4*len(v)
	if cap(dst) < need {
		grown := make([]byte, off, need)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:need]
	PutFloats(dst[off:], v)
	return dst
}

// PutFloats writes v as packed little-endian float32s into b, which must
// hold exactly 4*len(v) bytes.
func PutFloats(b []byte, v []float32) {
	if len(b) != 4*len(v) {
		panic(fmt.Sprintf("ams: PutFloats: %d bytes for %d values", len(b), len(v)))
	}
	if nativeLittle {
		copy(b, floatBytes(v))
		return
	}
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

// UnpackFloatsInto decodes packed little-endian float32s into dst, which
// must have exactly len(b)/4 elements.
func UnpackFloatsInto(dst []float32, b []byte) error {
	if len(b) != 4*len(dst) {
		return fmt.Errorf("ams: packed floats: %d bytes for %d values", len(b), len(dst))
	}
	if nativeLittle {
		copy(floatBytes(dst), b)
		return nil
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// UnpackFloats decodes packed little-endian float32s into dst (reused if
// large enough). It fails when len(b) is not a multiple of 4.
func UnpackFloats(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("ams: packed floats: %d bytes is not a multiple of 4", len(b))
	}
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	return dst, UnpackFloatsInto(dst, b)
}

// FloatsPayload returns v as a packed little-endian payload. On
// little-endian machines it is a view of v's memory, not a copy: v must not
// change until the payload has been sent. Elsewhere it is a packed copy.
func FloatsPayload(v []float32) []byte {
	if nativeLittle {
		return floatBytes(v)
	}
	return PackFloats(nil, v)
}

// IDsPayload returns ids as a packed little-endian payload, a view of their
// memory on little-endian machines (see FloatsPayload).
func IDsPayload(ids []uint64) []byte {
	if nativeLittle {
		if len(ids) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&ids[0])), 8*len(ids))
	}
	return PackIDs(nil, ids)
}

// PutIDs writes ids as packed little-endian uint64s into b, which must
// hold exactly 8*len(ids) bytes.
func PutIDs(b []byte, ids []uint64) {
	if len(b) != 8*len(ids) {
		panic(fmt.Sprintf("ams: PutIDs: %d bytes for %d ids", len(b), len(ids)))
	}
	if nativeLittle {
		copy(b, IDsPayload(ids))
		return
	}
	for i, id := range ids {
		binary.LittleEndian.PutUint64(b[8*i:], id)
	}
}
