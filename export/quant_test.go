package export

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHalfExactOnHalves(t *testing.T) {
	// Every finite half converts to float32 and back unchanged.
	for h := range uint32(1 << 16) {
		if h&0x7c00 == 0x7c00 {
			continue // infinities and NaNs
		}
		f := fromHalf(uint16(h))
		if got := toHalf(f); got != uint16(h) && !(f == 0 && got&0x7fff == 0) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, got)
		}
	}
}

func TestHalfRounding(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want float32
	}{
		{1, 1}, {-2.5, -2.5}, {65504, 65504}, {1e6, 65504}, {-1e6, -65504},
		{1 + 1.0/2048, 1},            // a tie: to even (1)
		{1 + 3.0/2048, 1 + 2.0/1024}, // a tie: to even (up)
		{float32(math.Ldexp(1, -24)), float32(math.Ldexp(1, -24))}, // the smallest subnormal
		{float32(math.Ldexp(1, -26)), 0},
	} {
		if got := fromHalf(toHalf(c.in)); got != c.want {
			t.Errorf("fp16(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if h := toHalf(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("fp16(NaN) = %#04x, not a NaN", h)
	}
}

func TestRowRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]float32, 16)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.1)
	}
	v[3] = 0
	for _, q := range Quants {
		b := AppendRow(nil, q, v)
		if len(b) != RowBytes(q, len(v)) {
			t.Fatalf("%s: %d bytes, RowBytes says %d", q, len(b), RowBytes(q, len(v)))
		}
		got := make([]float32, len(v))
		if err := DecodeRow(got, q, b); err != nil {
			t.Fatal(err)
		}
		var maxAbs float32
		for _, x := range v {
			maxAbs = max(maxAbs, abs32(x))
		}
		for i := range v {
			d := abs32(got[i] - v[i])
			var bound float32
			switch q {
			case FP16:
				bound = abs32(v[i])/2048 + float32(math.Ldexp(1, -25))
			case Int8:
				bound = maxAbs / 127 / 2 * (1 + 1.0/128) * 1.0001
			}
			if d > bound {
				t.Errorf("%s: value %d: %v decoded as %v (error %v > %v)", q, i, v[i], got[i], d, bound)
			}
		}
		if err := DecodeRow(got, q, b[:len(b)-1]); err == nil {
			t.Errorf("%s: a short row decoded", q)
		}
	}
	// An all-zero row under int8: scale 0, zeros back.
	got := []float32{1, 1}
	if err := DecodeRow(got, Int8, AppendRow(nil, Int8, []float32{0, 0})); err != nil || got[0] != 0 || got[1] != 0 {
		t.Errorf("int8 zeros: %v, %v", got, err)
	}
	if err := CheckQuant("bf16"); err == nil {
		t.Error("CheckQuant(bf16) = nil")
	}
}

func TestDecodeRefusesNonFinite(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, q := range []string{FP32, Int8} {
		b := AppendRow(nil, q, []float32{1, inf})
		if err := DecodeRow(make([]float32, 2), q, b); err == nil {
			t.Errorf("%s: a row with +Inf decoded", q)
		}
	}
}
