package export

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The encodings of a table's values in an export (TableSpec.Quant in the
// trainer's config, Table.Quant in a manifest).
const (
	// FP32 keeps every value as its float32 bits, little-endian: exact.
	FP32 = "fp32"
	// FP16 keeps every value as an IEEE 754 half (binary16), rounded to
	// nearest even, little-endian: a relative error of at most 2^-11 for
	// magnitudes in [2^-14, 65504]; smaller ones lose precision (halves
	// go subnormal below 2^-14, to zero below 2^-25) and larger ones
	// saturate to ±65504.
	FP16 = "fp16"
	// Int8 keeps a row as its scale s, max|v|/127 rounded up to a
	// bfloat16 (the top 16 bits of a float32), and each value as the int8
	// round(v/s): an absolute error of at most s/2 per value, s at most
	// (1 + 2^-7) max|v|/127.
	Int8 = "int8"
)

// Quants lists the encodings, the default (FP32) first.
var Quants = []string{FP32, FP16, Int8}

// CheckQuant returns an error naming the encodings unless q is one of
// them ("" means FP32).
func CheckQuant(q string) error {
	switch q {
	case "", FP32, FP16, Int8:
		return nil
	}
	return fmt.Errorf("export: quantization %q: want one of %v", q, Quants)
}

// RowBytes is the size of an encoded row of dim values.
func RowBytes(q string, dim int) int {
	switch q {
	case FP16:
		return 2 * dim
	case Int8:
		return 2 + dim
	}
	return 4 * dim
}

// AppendRow appends the encoding q of v to b.
func AppendRow(b []byte, q string, v []float32) []byte {
	switch q {
	case FP16:
		for _, x := range v {
			b = binary.LittleEndian.AppendUint16(b, toHalf(x))
		}
	case Int8:
		m := float32(0)
		for _, x := range v {
			m = max(m, abs32(x))
		}
		sb := bf16Up(m / 127)
		b = binary.LittleEndian.AppendUint16(b, sb)
		s := math.Float32frombits(uint32(sb) << 16)
		// In float64: 1/s overflows a float32 for a subnormal scale (every
		// value of a row below 2^-121 or so then clamped to ±127).
		inv := 0.0
		if s > 0 {
			inv = 1 / float64(s)
		}
		for _, x := range v {
			q := math.Round(float64(x) * inv)
			b = append(b, byte(int8(max(-127, min(127, q)))))
		}
	default:
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// DecodeRow decodes the encoding q of len(dst) values from b into dst. It
// fails when b is not RowBytes(q, len(dst)) long or holds a value that is
// not finite (a scale, an fp32 or fp16 value, or an int8 value times its
// scale).
func DecodeRow(dst []float32, q string, b []byte) error {
	if len(b) != RowBytes(q, len(dst)) {
		return fmt.Errorf("export: a %s row of %d bytes for %d values (want %d)", q, len(b), len(dst), RowBytes(q, len(dst)))
	}
	switch q {
	case FP16:
		for i := range dst {
			dst[i] = fromHalf(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case Int8:
		s := math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
		if !finite(s) || s < 0 {
			return fmt.Errorf("export: an int8 row with scale %v", s)
		}
		for i := range dst {
			dst[i] = float32(int8(b[2+i])) * s // may overflow: checked below
		}
	default:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	for _, x := range dst {
		if !finite(x) {
			return fmt.Errorf("export: a %s row holds %v", q, x)
		}
	}
	return nil
}

// bf16Up returns the bfloat16 nearest to x >= 0 from above (x itself
// when exact; +Inf stays +Inf, NaN stays NaN).
func bf16Up(x float32) uint16 {
	b := math.Float32bits(x)
	h := uint16(b >> 16)
	if b&0xffff != 0 && b&0x7f800000 != 0x7f800000 {
		h++ // the next bfloat16 up; a carry into the exponent is right
	}
	return h
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func finite(x float32) bool { return math.Float32bits(x)&0x7f800000 != 0x7f800000 }

// toHalf converts x to binary16, rounding to nearest even; magnitudes
// beyond the largest half saturate to it, NaN stays NaN.
func toHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	man := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 31: // overflow or infinity: saturate
		return sign | 0x7bff
	case exp <= 0: // subnormal half, or zero
		if exp < -10 {
			return sign
		}
		man |= 0x800000 // the implicit bit
		shift := uint(14 - exp)
		h := man >> shift
		rem, half := man&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent: still right
	}
	if h >= 0x7c00 {
		return sign | 0x7bff
	}
	return sign | uint16(h)
}

// fromHalf converts a binary16 to float32 (exactly).
func fromHalf(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h >> 10 & 0x1f)
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0: // zero or subnormal: man x 2^-24
		v := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
