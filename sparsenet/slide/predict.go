package slide

import (
	"fmt"
	"math"

	"github.com/xdlgo/xps/densenet"
)

// topScratch holds the running top-k lists of a prediction: per sample k
// scores and ids in descending order, and how many are filled.
type topScratch struct {
	score []float32
	id    []int32
	n     []int32
	block []float32 // dense scores of a block of rows
}

func (t *topScratch) reset(n, k int) {
	t.score = grow(t.score, n*k)
	if cap(t.id) < n*k {
		t.id = make([]int32, n*k)
	}
	t.id = t.id[:n*k]
	if cap(t.n) < n {
		t.n = make([]int32, n)
	}
	t.n = t.n[:n]
	clear(t.n)
}

// better orders predictions: higher score first, then lower id.
func better(s1 float32, id1 int32, s2 float32, id2 int32) bool {
	return s1 > s2 || (s1 == s2 && id1 < id2)
}

// pushTop inserts (score, id) into the descending list (s, ids) of which n
// entries are filled, keeping at most len(s), and returns the new count.
func pushTop(s []float32, ids []int32, n int, score float32, id int32) int {
	k := len(s)
	if n == k {
		if !better(score, id, s[k-1], ids[k-1]) {
			return n
		}
		n--
	}
	j := n
	for j > 0 && better(score, id, s[j-1], ids[j-1]) {
		s[j], ids[j] = s[j-1], ids[j-1]
		j--
	}
	s[j], ids[j] = score, id
	return n + 1
}

func (l *Layer) checkPredict(fn string, x []float32, n, k int, out []int32) {
	l.checkOpen()
	if n < 0 || k < 1 || len(x) != n*l.din || len(out) != n*k {
		panic(fmt.Sprintf("slide: %s: n %d, k %d, len(x) %d, len(out) %d for InputDim %d", fn, n, k, len(x), len(out), l.din))
	}
}

// PredictDense writes to out (n x k) the k highest-scoring neurons of each
// of the n input rows of x, scoring all Dim neurons (score = W_j·x + b_j;
// the softmax is monotone), best first, ties to the lower id; when Dim < k
// the rest of a row is -1. It panics on bad lengths or k < 1.
func (l *Layer) PredictDense(x []float32, n, k int, out []int32) {
	l.checkPredict("PredictDense", x, n, k, out)
	if n == 0 {
		return
	}
	d, din := l.d, l.din
	t := &l.top
	t.reset(n, k)
	blk := min(d, max(512, (1<<22)/n))
	t.block = grow(t.block, n*blk)
	for r0 := 0; r0 < d; r0 += blk {
		nb := min(blk, d-r0)
		s := t.block[:n*nb]
		densenet.Gemm(densenet.NoTrans, densenet.Trans, n, nb, din, 1, x, din, l.w[r0*din:(r0+nb)*din], din, 0, s, nb)
		l.pool.run(func(q int) {
			lo, hi := span(q, len(l.ws), n)
			for i := lo; i < hi; i++ {
				ts, ti := t.score[i*k:(i+1)*k], t.id[i*k:(i+1)*k]
				c := int(t.n[i])
				for j, v := range s[i*nb : (i+1)*nb] {
					c = pushTop(ts, ti, c, v+l.b[r0+j], int32(r0+j))
				}
				t.n[i] = int32(c)
			}
		})
	}
	l.writeTop(n, k, out)
}

func (l *Layer) writeTop(n, k int, out []int32) {
	t := &l.top
	for i := 0; i < n; i++ {
		c := int(t.n[i])
		copy(out[i*k:i*k+c], t.id[i*k:i*k+c])
		for j := c; j < k; j++ {
			out[i*k+j] = -1
		}
	}
}

// TopScores writes to scores (n x k) the scores of the predictions the
// last PredictDense or PredictSparse call on the same n and k wrote, in
// their order, and -Inf where it wrote -1: what merging the top-k lists
// of a sharded layer's owners needs. It panics on wrong lengths.
func (l *Layer) TopScores(n, k int, scores []float32) {
	t := &l.top
	if n < 0 || k < 1 || len(scores) != n*k || len(t.n) != n || len(t.score) != n*k {
		panic(fmt.Sprintf("slide: TopScores: n %d, k %d, len(scores) %d after a prediction of %d rows", n, k, len(scores), len(t.n)))
	}
	for i := 0; i < n; i++ {
		c := int(t.n[i])
		copy(scores[i*k:i*k+c], t.score[i*k:i*k+c])
		for j := c; j < k; j++ {
			scores[i*k+j] = float32(math.Inf(-1))
		}
	}
}

// PredictSparse is PredictDense over the LSH candidates of each input only:
// the neurons of the L buckets it hashes to, cut down to at most
// round(InferSparsity*Dim) by InferSelection (no random fill). It uses the
// inference tables of TuneInference when there are, else the training
// tables. Rows with fewer than k candidates end in -1s. A layer without
// tables predicts densely.
func (l *Layer) PredictSparse(x []float32, n, k int, out []int32) {
	l.checkPredict("PredictSparse", x, n, k, out)
	if l.tables == nil {
		l.PredictDense(x, n, k, out)
		return
	}
	t := &l.top
	t.reset(n, k)
	target := max(1, int(math.Round(l.cfg.InferSparsity*float64(l.d))))
	codes, L, find := l.lookup(x, n)
	din := l.din
	l.pool.run(func(q int) {
		w := l.ws[q]
		lo, hi := span(q, len(l.ws), n)
		for i := lo; i < hi; i++ {
			xi := x[i*din : (i+1)*din]
			r := newRNG(l.cfg.Seed^tagInfer, 0, uint64(i))
			w.active = find(q, codes[i*L:(i+1)*L], target, &r, w.active)
			ts, ti := t.score[i*k:(i+1)*k], t.id[i*k:(i+1)*k]
			c := 0
			for _, id := range w.active {
				o := int(id) * din
				c = pushTop(ts, ti, c, densenet.Dot(l.w[o:o+din], xi)+l.b[id], id)
			}
			t.n[i] = int32(c)
		}
	})
	l.writeTop(n, k, out)
}

// Candidates appends to dst[:0] the candidate set PredictSparse scores for
// input v (len InputDim), or nil without tables. It is for measuring
// recall; like the other methods it must not run concurrently with them.
func (l *Layer) Candidates(v []float32, dst []int32) []int32 {
	l.checkOpen()
	if l.tables == nil {
		return nil
	}
	if len(v) != l.din {
		panic(fmt.Sprintf("slide: Candidates: len(v) %d, want %d", len(v), l.din))
	}
	codes, _, find := l.lookup(v, 1)
	r := newRNG(l.cfg.Seed^tagInfer, 0, 0)
	target := max(1, int(math.Round(l.cfg.InferSparsity*float64(l.d))))
	return find(0, codes, target, &r, dst)
}
