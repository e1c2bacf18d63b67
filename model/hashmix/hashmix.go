package hashmix

import "math/bits"

// Mix64 is the splitmix64 finalizer: a bijective avalanche of x.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// golden is 2^64 divided by the golden ratio, the splitmix64 increment.
const golden = 0x9e3779b97f4a7c15

// Hash3 mixes three words into one: counter-based randomness keyed by
// (seed, a, b), the same whichever goroutine asks.
func Hash3(a, b, c uint64) uint64 {
	return Mix64(a ^ Mix64(b+golden) ^ Mix64(c+0x3c6ef372fe94f82b))
}

// Stream is a small splitmix64 generator. The zero value is a valid
// stream; NewStream derives independent streams from a seed and two stream
// numbers. A Stream is used by one goroutine.
type Stream struct{ s uint64 }

// NewStream returns the stream of (seed, a, b).
func NewStream(seed, a, b uint64) Stream { return Stream{s: Hash3(seed, a, b)} }

// Next returns the next 64 random bits.
func (r *Stream) Next() uint64 {
	r.s += golden
	return Mix64(r.s)
}

// IntN returns a uniform integer in [0, n) (Lemire's multiply-shift; the
// bias is below n/2^64). n must be > 0.
func (r *Stream) IntN(n int) int {
	hi, _ := bits.Mul64(r.Next(), uint64(n))
	return int(hi)
}

// Float64 returns a uniform number in [0, 1).
func (r *Stream) Float64() float64 { return float64(r.Next()>>11) / (1 << 53) }
