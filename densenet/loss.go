package densenet

import "math"

// Sigmoid returns 1/(1+exp(-x)), computed without overflow for any x:
// it is exactly 0 or 1 only where float32 cannot hold the difference, and
// never NaN for a non-NaN x.
func Sigmoid(x float32) float32 {
	return float32(sigmoid64(float64(x)))
}

func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// SigmoidBCE computes the mean binary cross-entropy of n = len(logits)
// samples whose predicted probability is sigmoid(logit):
//
//	loss = -1/n * Σ (y*log(p) + (1-y)*log(1-p)),  p = sigmoid(z)
//
// evaluated in float64 in the stable form max(z,0) - z*y + log1p(exp(-|z|)),
// so that large |logit| gives no NaN or Inf. It writes probs[i] = p and
// dlogits[i] = (p - y)/n, the gradient of the mean loss with respect to
// logits[i], and returns the mean loss (0 when n is 0). Labels are 0 or 1
// (soft labels in [0, 1] work too).
//
// It panics unless labels, probs and dlogits have the length of logits.
// probs and dlogits may not overlap logits or labels (the element-wise
// same-index case is allowed).
func SigmoidBCE(logits, labels, probs, dlogits []float32) float64 {
	n := len(logits)
	if len(labels) != n || len(probs) != n || len(dlogits) != n {
		panic("densenet: SigmoidBCE length mismatch")
	}
	if n == 0 {
		return 0
	}
	labels = labels[:n]
	probs = probs[:n]
	dlogits = dlogits[:n]
	inv := 1 / float64(n)
	var sum float64
	for i, zf := range logits {
		z, y := float64(zf), float64(labels[i])
		sum += max(z, 0) - z*y + math.Log1p(math.Exp(-math.Abs(z)))
		p := sigmoid64(z)
		probs[i] = float32(p)
		dlogits[i] = float32((p - y) * inv)
	}
	return sum * inv
}
