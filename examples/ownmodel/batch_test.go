package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/reader"
)

// TestGradients checks backward against central finite differences of the
// mean loss, for every row value and every dense parameter of a small
// batch in which ids repeat within and across samples.
func TestGradients(t *testing.T) {
	const k, userFields = 3, 2
	rng := rand.New(rand.NewPCG(1, 2))
	var ds reader.Dataset
	for s := range 5 {
		var feats []reader.Feature
		for f := range uint32(4) {
			for j := range 1 + rng.IntN(2) {
				feats = append(feats, reader.Feature{Field: f, ID: uint64(f)<<32 | uint64(rng.IntN(3)+j*5), Value: 1})
			}
		}
		ds.Append(float32(s%2), feats)
	}
	b := &batch{k: k, slot: make(map[uint64]int32), params: make([]float32, 1+k*k), dgrad: make([]float32, 1+k*k)}
	b.load(&ds, []int{0, 1, 2, 3, 4}, userFields)
	for i := range b.rows {
		b.rows[i] = float32(rng.NormFloat64() * 0.5)
	}
	for i := range b.params {
		b.params[i] = float32(rng.NormFloat64() * 0.5)
	}
	loss := func() float64 {
		b.forward()
		return densenet.SigmoidBCE(b.logits, b.labels, b.probs, b.dlogits)
	}
	loss()
	b.backward()
	check := func(name string, vals, grads []float32) {
		want := append([]float32(nil), grads...)
		for i := range vals {
			const eps = 1e-2
			v := vals[i]
			vals[i] = v + eps
			up := loss()
			vals[i] = v - eps
			down := loss()
			vals[i] = v
			fd := (up - down) / (2 * eps)
			if math.Abs(fd-float64(want[i])) > 1e-3+1e-2*math.Abs(fd) {
				t.Errorf("%s[%d]: backward %.6f, finite differences %.6f", name, i, want[i], fd)
			}
		}
	}
	check("rows", b.rows, b.grads)
	check("dense", b.params, b.dgrad)
}
