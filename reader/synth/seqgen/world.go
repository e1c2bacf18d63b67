package seqgen

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/xdlgo/xps/model/hashmix"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// Key derivation constants: each hidden quantity has its own key derived
// from WorldSeed. The salts are arbitrary.
const (
	golden        = 0x9e3779b97f4a7c15
	saltCentre    = 0x4345_4e54_5245_5321
	saltItem      = 0x4954_454d_5645_4353
	saltProfile   = 0x5345_5150_524f_4649
	saltSegment   = 0x5345_474d_454e_5453
	saltCalibrate = 0x5345_5143_414c_4942
)

// world is the hidden part of the data: the items' vectors, the users'
// profiles and the teacher. It is read-only once built, so the generators
// of one world (Fork) share it.
type world struct {
	cfg  Config // Seed is the first generator's; the world ignores it
	key  uint64
	vec  []float32 // item i's vector is vec[i*Dim : (i+1)*Dim]
	bias float64   // calibrated in New
}

// newWorld builds the item vectors: v_i = mu_c + tau*eps_i, with the
// components of mu_c (c the item's category) and eps_i approximately
// N(0, 1/Dim).
func newWorld(cfg *Config) *world {
	w := &world{cfg: *cfg, key: hashmix.Mix64(cfg.WorldSeed ^ golden)}
	d := cfg.Dim
	inv := 1 / math.Sqrt(float64(d))
	centre := make([]float64, cfg.Categories*d)
	for i := range centre {
		centre[i] = inv * datagen.Normalish(hashmix.Hash3(w.key^saltCentre, uint64(i/d), uint64(i%d)))
	}
	w.vec = make([]float32, cfg.Items*d)
	for i := range w.vec {
		item := i / d
		eps := inv * datagen.Normalish(hashmix.Hash3(w.key^saltItem, uint64(item), uint64(i%d)))
		w.vec[i] = float32(centre[w.category(int32(item))*d+i%d] + cfg.ItemSpread*eps)
	}
	return w
}

// category returns the category of item: item mod Categories.
func (w *world) category(item int32) int { return int(item) % w.cfg.Categories }

// itemOf returns an item of category c, uniformly: c + Categories*k.
func (w *world) itemOf(c int, r *rand.Rand) int32 {
	n := (w.cfg.Items - c + w.cfg.Categories - 1) / w.cfg.Categories
	return int32(c + w.cfg.Categories*r.IntN(n))
}

// profile is a user's hidden profile.
type profile struct {
	segment   int
	term      float64   // the user term of the logit
	interests []int     // categories; with drift in the order of the history, the last is current
	cum       []float64 // cumulative interest weights, the last is 1
}

// pick returns the index of the interest that u in [0, 1) selects by the
// weights.
func (p *profile) pick(u float64) int {
	for k, c := range p.cum {
		if u < c {
			return k
		}
	}
	return len(p.cum) - 1
}

// loadProfile draws user u's profile into p, a function of u and the
// world: 2..MaxInterests distinct categories, weights Dirichlet(1, ...,
// 1), a segment, and the term UserStd*(z_segment + z_user)/sqrt(2).
func (w *world) loadProfile(u uint64, p *profile) {
	st := hashmix.NewStream(w.key^saltProfile, u, 0)
	m := 2 + st.IntN(w.cfg.MaxInterests-1)
	p.interests = p.interests[:0]
	for len(p.interests) < m {
		if c := st.IntN(w.cfg.Categories); !slices.Contains(p.interests, c) {
			p.interests = append(p.interests, c)
		}
	}
	p.cum = p.cum[:0]
	var sum float64
	for range m {
		sum += -math.Log(1 - st.Float64())
		p.cum = append(p.cum, sum)
	}
	for k := range p.cum {
		p.cum[k] /= sum
	}
	p.segment = st.IntN(w.cfg.Segments)
	zs := datagen.Normalish(hashmix.Mix64(w.key ^ saltSegment ^ uint64(p.segment)*golden))
	p.term = w.cfg.UserStd * (zs + datagen.Normalish(st.Next())) / math.Sqrt2
}

// dot returns <v_a, v_b>.
func (w *world) dot(a, b int32) float64 {
	d := w.cfg.Dim
	va, vb := w.vec[int(a)*d:int(a+1)*d], w.vec[int(b)*d:int(b+1)*d]
	var s float64
	for j, x := range va {
		s += float64(x) * float64(vb[j])
	}
	return s
}

// attend returns the attention-pooled similarity of candidate c to the
// history: sum_t w_t <v_t, v_c> with w = softmax_t(beta <v_t, v_c> +
// gamma t/L), t = 0 the oldest of the L items; 0 for an empty history.
// dots is scratch of at least len(hist).
func (w *world) attend(hist []int32, c int32, beta, gamma float64, dots []float64) float64 {
	if len(hist) == 0 {
		return 0
	}
	l := float64(len(hist))
	top := math.Inf(-1)
	for t, it := range hist {
		dots[t] = w.dot(it, c)
		top = max(top, beta*dots[t]+gamma*float64(t)/l)
	}
	var num, den float64
	for t := range hist {
		e := math.Exp(beta*dots[t] + gamma*float64(t)/l - top)
		num += e * dots[t]
		den += e
	}
	return num / den
}

// logit returns the teacher's logit of candidate c for a user of profile
// p with history hist.
func (w *world) logit(p *profile, hist []int32, c int32, dots []float64) float64 {
	return w.bias + p.term + w.cfg.Scale*w.attend(hist, c, w.cfg.Beta, w.cfg.Gamma, dots)
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
