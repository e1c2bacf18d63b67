package metrics

import "math"

// streamBins is the number of probability bins of a Stream: AUC from bins
// treats probabilities in one bin as ties, an error below 1/streamBins of
// the pairs that fall in one bin (negligible at this width).
const streamBins = 1 << 14

// Stream accumulates AUC and log loss over an unbounded stream of
// predictions in constant memory: progressive validation of a streaming
// job, where every prediction is made before its sample is trained on.
// AUC counts positives and negatives per probability bin (ties within a
// bin count one half); LogLoss is exact. The zero value is not ready: use
// NewStream. A Stream is used by one goroutine.
type Stream struct {
	pos, neg []float64
	lossSum  float64
	n        int64
}

// NewStream returns an empty Stream.
func NewStream() *Stream {
	return &Stream{pos: make([]float64, streamBins), neg: make([]float64, streamBins)}
}

// Add adds predictions probs (in [0, 1]) of samples with labels.
func (s *Stream) Add(labels, probs []float32) {
	checkLen("Stream.Add", labels, probs)
	for i, p := range probs {
		q := min(max(float64(p), 0), 1)
		b := min(int(q*streamBins), streamBins-1)
		y := float64(labels[i])
		if y > 0.5 {
			s.pos[b]++
		} else {
			s.neg[b]++
		}
		c := min(max(q, logLossEps), 1-logLossEps)
		s.lossSum -= y*math.Log(c) + (1-y)*math.Log(1-c)
	}
	s.n += int64(len(probs))
}

// N returns the number of predictions added.
func (s *Stream) N() int64 { return s.n }

// LogLoss returns the mean log loss so far (NaN when empty).
func (s *Stream) LogLoss() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.lossSum / float64(s.n)
}

// AUC returns the AUC so far (NaN without both classes).
func (s *Stream) AUC() float64 {
	var negBelow, pairs, P, N float64
	for b := range s.pos {
		pairs += s.pos[b] * (negBelow + s.neg[b]/2)
		negBelow += s.neg[b]
		P += s.pos[b]
	}
	N = negBelow
	if P == 0 || N == 0 {
		return math.NaN()
	}
	return pairs / (P * N)
}
