package ams

import (
	"encoding/binary"
	"fmt"
	"math"
)

// MaxMessageBytes bounds one AMS gRPC message in either direction.
const MaxMessageBytes = 1 << 30

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
	b := dst[off:]
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return dst
}

// UnpackFloatsInto decodes packed little-endian float32s into dst, which
// must have exactly len(b)/4 elements.
func UnpackFloatsInto(dst []float32, b []byte) error {
	if len(b) != 4*len(dst) {
		return fmt.Errorf("ams: packed floats: %d bytes for %d values", len(b), len(dst))
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
