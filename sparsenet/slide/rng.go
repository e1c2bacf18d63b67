package slide

import (
	"math"
	"math/bits"
)

// golden is 2^64 divided by the golden ratio, the splitmix64 increment.
const golden = 0x9e3779b97f4a7c15

// mix64 is the splitmix64 finalizer: a bijective avalanche of x.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hash3 mixes three words into one; it is the counter-based randomness of
// the tables' reservoirs and of DWTA's densification.
func hash3(a, b, c uint64) uint64 {
	return mix64(a ^ mix64(b+golden) ^ mix64(c+0x3c6ef372fe94f82b))
}

// rng is a small splitmix64 generator. The zero value is a valid stream;
// newRNG derives independent streams from a seed and stream numbers, so that
// a sample's randomness depends on (seed, batch, sample) and not on which
// goroutine draws it.
type rng struct{ s uint64 }

func newRNG(seed, a, b uint64) rng { return rng{s: hash3(seed, a, b)} }

func (r *rng) next() uint64 {
	r.s += golden
	return mix64(r.s)
}

// intn returns a uniform integer in [0, n) (Lemire's multiply-shift; the
// bias is below n/2^64). n must be > 0.
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int(hi)
}

// float64 returns a uniform number in [0, 1).
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }

// normal returns a standard normal number (Box-Muller).
func (r *rng) normal() float64 {
	u := 1 - r.float64() // (0, 1]
	v := r.float64()
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}

// shuffle applies a Fisher-Yates shuffle to p.
func (r *rng) shuffle(p []int32) {
	for i := len(p) - 1; i > 0; i-- {
		j := r.intn(i + 1)
		p[i], p[j] = p[j], p[i]
	}
}
