package slide

import "math"

// adamSteps returns Adam's bias-corrected step size
//
//	lrT(t) = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
//
// for t = 1, 2, ... up to the step where it has converged to lr in float32
// (at most 2^20 steps); later steps use the last entry.
func adamSteps(lr, beta1, beta2 float32) []float32 {
	var out []float32
	p1, p2 := 1.0, 1.0
	for t := 1; t <= 1<<20; t++ {
		p1 *= float64(beta1)
		p2 *= float64(beta2)
		v := float32(float64(lr) * math.Sqrt(1-p2) / (1 - p1))
		out = append(out, v)
		if v == lr && p1 < 1e-12 && p2 < 1e-12 {
			break
		}
	}
	return out
}

// adamRow applies one lazy Adam step to row r with weight gradient g and
// bias gradient gb: the row's step count t advances and sets the bias
// correction, in the "epsilon hat" form of optim.Adam, which updates the
// weights (with its AVX kernel where there is one):
//
//	t := steps[r] + 1
//	lrT := LR * sqrt(1 - Beta2^t) / (1 - Beta1^t)
//	for each weight and the bias: m = Beta1*m + (1-Beta1)*g
//	                              v = Beta2*v + (1-Beta2)*g*g
//	                              w -= lrT * m / (sqrt(v) + Epsilon)
func (l *Layer) adamRow(r int32, g []float32, gb float32) {
	t := l.steps[r] + 1
	l.steps[r] = t
	o, sw := int(r)*l.din, 2*l.din+1
	l.opt.Apply(l.w[o:o+l.din], l.st[int(r)*sw:(int(r)+1)*sw], g)
	lrT := l.lrT[min(int(t), len(l.lrT))-1]
	c := &l.cfg
	b1, b2 := c.Beta1, c.Beta2
	m := float32(b1*l.mb[r]) + float32((1-b1)*gb)
	v := float32(b2*l.vb[r]) + float32((1-b2)*gb*gb)
	l.mb[r], l.vb[r] = m, v
	l.b[r] -= lrT * m / (sqrt32(v) + c.Epsilon)
}

func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
