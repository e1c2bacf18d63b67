package slide

import (
	"math"

	"github.com/xdlgo/xps/densenet"
)

// denseScratch holds the buffers of dense training (Sparsity 1), allocated
// on first use: logits/deltas (n x d), the weight gradient (d x InputDim)
// and the bias gradient (d).
type denseScratch struct {
	z, gw, gb []float32
	loss      []float64
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// trainDense is TrainBatch over all neurons, with GEMMs:
//
//	Z = X·Wᵀ + b, δ = scale*(softmax(Z) - Y), dX = δ·W, dW = δᵀ·X, db = Σ δ
//
// followed by Adam on every row.
func (l *Layer) trainDense(x []float32, n int, labels [][]int32, dx []float32, scale float32) float64 {
	d, din := l.d, l.din
	ds := &l.dense
	ds.z = grow(ds.z, n*d)
	ds.gw = grow(ds.gw, d*din)
	ds.gb = grow(ds.gb, d)
	if len(ds.loss) != len(l.ws) {
		ds.loss = make([]float64, len(l.ws))
	}
	z := ds.z
	densenet.Gemm(densenet.NoTrans, densenet.Trans, n, d, din, 1, x, din, l.w, din, 0, z, d)
	l.pool.run(func(q int) {
		ds.loss[q] = 0
		lo, hi := span(q, len(l.ws), n)
		for i := lo; i < hi; i++ {
			zi := z[i*d : (i+1)*d]
			labs := labels[i]
			if len(labs) == 0 {
				clear(zi)
				continue
			}
			densenet.AddBias(zi, l.b)
			ds.loss[q] += denseSoftmaxGrad(zi, labs, scale)
		}
	})
	if dx != nil {
		densenet.Gemm(densenet.NoTrans, densenet.NoTrans, n, din, d, 1, z, d, l.w, din, 0, dx, din)
	}
	densenet.Gemm(densenet.Trans, densenet.NoTrans, d, din, n, 1, z, d, x, din, 0, ds.gw, din)
	densenet.ColSums(ds.gb, z)
	l.pool.run(func(q int) {
		lo, hi := span(q, len(l.ws), d)
		for r := lo; r < hi; r++ {
			l.adamRow(int32(r), ds.gw[r*din:(r+1)*din], ds.gb[r])
		}
	})
	var loss float64
	for _, v := range ds.loss {
		loss += v
	}
	return loss
}

// denseSoftmaxGrad is softmaxGrad over all logits z with the targets
// spread uniformly over the distinct labels.
func denseSoftmaxGrad(z []float32, labels []int32, scale float32) float64 {
	mx := z[0]
	for _, v := range z {
		mx = max(mx, v)
	}
	nl := 0
	var lz float64
	for i, id := range labels {
		if !seenBefore(labels[:i], id) {
			nl++
			lz += float64(z[id] - mx)
		}
	}
	var sum float64
	for j, v := range z {
		e := exp32(v - mx)
		z[j] = e
		sum += float64(e)
	}
	inv := float32(1/sum) * scale
	for j := range z {
		z[j] *= inv
	}
	y := scale / float32(nl)
	for i, id := range labels {
		if !seenBefore(labels[:i], id) {
			z[id] -= y
		}
	}
	return math.Log(sum) - lz/float64(nl)
}

func seenBefore(s []int32, id int32) bool {
	for _, v := range s {
		if v == id {
			return true
		}
	}
	return false
}
