package slide

import (
	"math"

	"github.com/xdlgo/xps/model/hashmix"
)

// hash3 mixes three words into one; it is the counter-based randomness of
// the tables' reservoirs and of DWTA's densification.
func hash3(a, b, c uint64) uint64 { return hashmix.Hash3(a, b, c) }

// rng is a splitmix64 stream (hashmix.Stream) with normal draws. The zero
// value is a valid stream; newRNG derives independent streams from a seed
// and stream numbers, so that a sample's randomness depends on (seed,
// batch, sample) and not on which goroutine draws it.
type rng struct{ hashmix.Stream }

func newRNG(seed, a, b uint64) rng { return rng{hashmix.NewStream(seed, a, b)} }

// normal returns a standard normal number (Box-Muller).
func (r *rng) normal() float64 {
	u := 1 - r.Float64() // (0, 1]
	v := r.Float64()
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}

// shuffle applies a Fisher-Yates shuffle to p.
func (r *rng) shuffle(p []int32) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}
