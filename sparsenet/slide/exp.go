package slide

import "math"

// exp32 returns e^x in float32 for x <= 0 (the softmax's shifted logits),
// with a relative error of a few float32 ulps: Cephes' expf, a range
// reduction x = n*ln2 + r with |r| <= ln2/2 and a degree-6 polynomial for
// e^r, scaled by 2^n through the exponent bits. Below -87.3 it returns 0;
// NaN gives NaN.
func exp32(x float32) float32 {
	if x < -87.3 {
		return 0
	}
	if x > 0 {
		return float32(math.Exp(float64(x)))
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	n := float32(int32(x*log2e - 0.5)) // round half down; x <= 0
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}
