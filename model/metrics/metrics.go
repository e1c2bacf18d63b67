package metrics

import (
	"fmt"
	"math"
	"slices"
)

// AUC returns the area under the ROC curve of scores against labels: the
// probability that a random positive scores above a random negative, ties
// counting one half. It is computed from ranks in O(n log n):
//
//	AUC = (sum of the (average, 1-based) ranks of the positives - P(P+1)/2) / (P*N)
//
// which equals the pair count
//
//	sum over positive i, negative j of [s_i > s_j] + 0.5*[s_i == s_j], divided by P*N.
//
// AUC returns NaN when there are no positives, no negatives, or a NaN score.
func AUC(labels, scores []float32) float64 {
	checkLen("AUC", labels, scores)
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
		if math.IsNaN(float64(scores[i])) {
			return math.NaN()
		}
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch sa, sb := scores[a], scores[b]; {
		case sa < sb:
			return -1
		case sa > sb:
			return 1
		}
		return 0
	})
	var pos, rankSum float64
	for i := 0; i < n; {
		j := i + 1
		for j < n && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		// Items i..j-1 tie; each gets the average of ranks i+1..j.
		avg := float64(i+1+j) / 2
		for k := i; k < j; k++ {
			if labels[idx[k]] > 0.5 {
				pos++
				rankSum += avg
			}
		}
		i = j
	}
	neg := float64(n) - pos
	if pos == 0 || neg == 0 {
		return math.NaN()
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg)
}

// logLossEps clips probabilities to [eps, 1-eps] so that a confident mistake
// costs a large but finite loss. float32 cannot represent 1-eps much closer
// to 1 than this.
const logLossEps = 1e-7

// LogLoss returns the mean binary cross-entropy (natural log)
//
//	-1/n * sum_i y_i*log(p_i) + (1-y_i)*log(1-p_i)
//
// with each p_i clipped to [1e-7, 1-1e-7]. Labels may be soft (in [0, 1]).
// It returns NaN for empty input.
func LogLoss(labels, probs []float32) float64 {
	checkLen("LogLoss", labels, probs)
	if len(probs) == 0 {
		return math.NaN()
	}
	var sum float64
	for i, p := range probs {
		q := min(max(float64(p), logLossEps), 1-logLossEps)
		y := float64(labels[i])
		sum -= y*math.Log(q) + (1-y)*math.Log(1-q)
	}
	return sum / float64(len(probs))
}

func checkLen(fn string, labels, x []float32) {
	if len(labels) != len(x) {
		panic(fmt.Sprintf("metrics: %s: %d labels, %d scores", fn, len(labels), len(x)))
	}
}
