package ams

import (
	"fmt"
	"math"
)

// Initializer kinds accepted by InitSpec.Kind.
const (
	InitZeros    = "zeros"
	InitConstant = "constant"
	InitUniform  = "uniform"
	InitNormal   = "normal"
)

// initKind is the parsed InitSpec.Kind.
type initKind uint8

const (
	kindZeros initKind = iota
	kindConstant
	kindUniform
	kindNormal
)

func parseInitKind(s string) (initKind, bool) {
	switch s {
	case InitZeros:
		return kindZeros, true
	case InitConstant:
		return kindConstant, true
	case InitUniform:
		return kindUniform, true
	case InitNormal:
		return kindNormal, true
	}
	return 0, false
}

const (
	initSalt   = 0x2545f4914f6cdd1d // separates the init stream from other uses of Mix64
	goldenStep = 0x9e3779b97f4a7c15 // 2^64 / golden ratio, the splitmix64 increment
)

// initializer is an InitSpec compiled for the hot path.
type initializer struct {
	kind  initKind
	value float32
	scale float32
	seed  uint64 // Mix64(Seed ^ initSalt)
}

func (s InitSpec) compile() (initializer, error) {
	k, ok := parseInitKind(s.Kind)
	if !ok {
		return initializer{}, fmt.Errorf("%w: init kind %q is not one of zeros, constant, uniform, normal", ErrBadSpec, s.Kind)
	}
	return initializer{kind: k, value: s.Value, scale: s.Scale, seed: mix64(s.Seed ^ initSalt)}, nil
}

// Fill writes the initial row of feature id into row. The result depends
// only on (Kind, Value, Scale, Seed, id) and the column, never on the row
// length, the shard, the stripe or the order of creation: column c of id is
// a function of Mix64 hashes of (Seed, id, c) (see the package doc), so a
// row restored onto another shard count, or re-created after expiry, starts
// from the same values.
//
// Fill uses the spec as given (it does not apply defaults); it panics if
// Kind is not a valid kind (Validate reports that as an error first).
func (s InitSpec) Fill(id uint64, row []float32) {
	in, err := s.compile()
	if err != nil {
		panic(err)
	}
	in.fill(id, row)
}

// fill implements InitSpec.Fill.
//
// base = Mix64(Mix64(Seed^initSalt) ^ id); the hash of word j is
// Mix64(base + (j+1)*goldenStep).
//   - uniform: column c takes the top 24 bits u of hash c as
//     Scale * (2*u/2^24 - 1), in [-Scale, Scale).
//   - normal: columns 2p and 2p+1 are the Box-Muller pair of hashes 2p and
//     2p+1 (53-bit uniforms u1 in (0, 1] and u2 in [0, 1)):
//     Scale*sqrt(-2 ln u1)*cos(2 pi u2) and Scale*sqrt(-2 ln u1)*sin(2 pi u2).
func (in *initializer) fill(id uint64, row []float32) {
	switch in.kind {
	case kindZeros:
		clear(row)
	case kindConstant:
		for i := range row {
			row[i] = in.value
		}
	case kindUniform:
		base := mix64(in.seed ^ id)
		for c := range row {
			h := mix64(base + uint64(c+1)*goldenStep)
			u := float32(h>>40) * 0x1p-23 // [0, 2)
			row[c] = in.scale * (u - 1)
		}
	case kindNormal:
		base := mix64(in.seed ^ id)
		for c := 0; c < len(row); c += 2 {
			h1 := mix64(base + uint64(c+1)*goldenStep)
			h2 := mix64(base + uint64(c+2)*goldenStep)
			u1 := float64(h1>>11+1) * 0x1p-53 // (0, 1]
			u2 := float64(h2>>11) * 0x1p-53   // [0, 1)
			r := float64(in.scale) * math.Sqrt(-2*math.Log(u1))
			sin, cos := math.Sincos(2 * math.Pi * u2)
			row[c] = float32(r * cos)
			if c+1 < len(row) {
				row[c+1] = float32(r * sin)
			}
		}
	}
}
