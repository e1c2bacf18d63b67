package slide

import "math/bits"

// selector builds active sets. It deduplicates with a stamp array (one
// uint32 per neuron, advanced by two per query instead of cleared) and
// counts table hits per candidate. It belongs to one goroutine.
type selector struct {
	d     int
	stamp []uint32 // candMark / labelMark of the current query, or older
	cur   uint32
	count []uint16 // tables a candidate was found in (valid for candMark)
	cand  []int32
	tie   []int32
	hist  []int32
}

func newSelector(d, l int) *selector {
	return &selector{d: d, stamp: make([]uint32, d), count: make([]uint16, d), hist: make([]int32, l+2)}
}

// advance starts a query and returns its candidate and label marks.
func (s *selector) advance() (candMark, labelMark uint32) {
	if s.cur >= ^uint32(0)-4 {
		clear(s.stamp)
		s.cur = 0
	}
	s.cur += 2
	return s.cur, s.cur + 1
}

// query describes one active-set selection.
type query struct {
	codes  []uint32 // the input's L codes
	labels []int32  // true labels (training), in [0, d); may repeat
	target int      // wanted size
	fill   bool     // fill up with random neurons
	sel    Selection
}

// selectActive appends to dst[:0] the active set of q and returns it with
// the number of distinct labels (which come first, in order of first
// appearance) and, appended to missed[:0], the labels that none of the L
// buckets held. The set is
//
//   - the distinct labels; then
//   - the distinct neurons of the L buckets, cut down to target minus the
//     labels when there are more (SelectRandom: a uniform subset;
//     SelectByCount: those found in the most tables, ties at random); then
//   - if q.fill, uniform random other neurons up to the target.
//
// Its size is thus max(distinct labels, target) with fill on, and at most
// that without. The order of the hashed candidates depends on r.
func (s *selector) selectActive(t *Tables, q query, r *rng, dst, missed []int32) ([]int32, int, []int32) {
	candMark, labelMark := s.advance()
	dst, missed = dst[:0], missed[:0]
	for _, id := range q.labels {
		if s.stamp[id] != labelMark {
			s.stamp[id] = labelMark
			s.count[id] = 0
			dst = append(dst, id)
		}
	}
	nl := len(dst)
	target := min(max(q.target, nl), s.d)
	s.cand = s.cand[:0]
	if t != nil {
		for tb, c := range q.codes {
			for _, id := range t.Bucket(tb, c) {
				switch s.stamp[id] {
				case candMark:
					s.count[id]++
				case labelMark:
					s.count[id] = 1 // a label that was found
				default:
					s.stamp[id] = candMark
					s.count[id] = 1
					s.cand = append(s.cand, id)
				}
			}
		}
	}
	for _, id := range dst[:nl] {
		if s.count[id] == 0 {
			missed = append(missed, id)
		}
	}
	dst = s.cut(dst, target-nl, q.sel, r)
	if q.fill && len(dst) < target {
		dst = s.fill(dst, target, candMark, labelMark, r)
	}
	return dst, nl, missed
}

// cut appends to dst the candidates s.cand, cut down to need by sel.
func (s *selector) cut(dst []int32, need int, sel Selection, r *rng) []int32 {
	switch {
	case need <= 0:
	case len(s.cand) <= need:
		dst = append(dst, s.cand...)
	case sel == SelectByCount:
		dst = s.byCount(dst, need, r)
	default:
		c := s.cand
		for j := 0; j < need; j++ {
			k := j + r.IntN(len(c)-j)
			c[j], c[k] = c[k], c[j]
		}
		dst = append(dst, c[:need]...)
	}
	return dst
}

// selectSketch appends to dst[:0] the candidates of an input whose
// signature is sig among the rows of sk, as selectActive does with the L
// tables of one bit that sk stands for (a row is in the input's bucket of
// table t when bit t of their signatures agree): every row that agrees on
// at least one bit, with the number of bits it agrees on as its count,
// cut down to target by sel (no labels, no fill).
func (s *selector) selectSketch(sk *sketches, sig []uint64, target int, sel Selection, r *rng, dst []int32) []int32 {
	candMark, _ := s.advance()
	dst = dst[:0]
	s.cand = s.cand[:0]
	w := len(sig)
	for id := 0; id < s.d; id++ {
		row := sk.sig[id*w : (id+1)*w]
		diff := 0
		for i, x := range row {
			diff += bits.OnesCount64(x ^ sig[i])
		}
		if c := sk.l - diff; c > 0 {
			s.stamp[id] = candMark
			s.count[id] = uint16(c)
			s.cand = append(s.cand, int32(id))
		}
	}
	return s.cut(dst, min(target, s.d), sel, r)
}

// byCount appends the need candidates with the highest counts, ties at
// random.
func (s *selector) byCount(dst []int32, need int, r *rng) []int32 {
	h := s.hist
	clear(h)
	top := 0
	for _, id := range s.cand {
		c := int(s.count[id])
		if c >= len(h) {
			c = len(h) - 1
		}
		h[c]++
		top = max(top, c)
	}
	// Threshold: the count c* with more than need candidates at >= c* but
	// at most need above it.
	above := 0
	th := top
	for ; th > 0; th-- {
		if above+int(h[th]) >= need {
			break
		}
		above += int(h[th])
	}
	s.tie = s.tie[:0]
	for _, id := range s.cand {
		c := min(int(s.count[id]), len(h)-1)
		switch {
		case c > th:
			dst = append(dst, id)
		case c == th:
			s.tie = append(s.tie, id)
		}
	}
	rest := need - above
	c := s.tie
	for j := 0; j < rest; j++ {
		k := j + r.IntN(len(c)-j)
		c[j], c[k] = c[k], c[j]
	}
	return append(dst, c[:rest]...)
}

// fill appends uniform random neurons not yet in the set until it has target
// members.
func (s *selector) fill(dst []int32, target int, candMark, labelMark uint32, r *rng) []int32 {
	// Candidates cut away by the sampling keep candMark; mark the ones
	// kept so that they are not drawn twice, and free the others.
	fillMark := candMark // reuse: after this, candMark means "in the set"
	for _, id := range s.cand {
		s.stamp[id] = 0
	}
	for _, id := range dst {
		s.stamp[id] = fillMark
	}
	if 2*target <= s.d {
		for len(dst) < target {
			id := int32(r.IntN(s.d))
			if m := s.stamp[id]; m != fillMark && m != labelMark {
				s.stamp[id] = fillMark
				dst = append(dst, id)
			}
		}
		return dst
	}
	// Dense target: a scan from a random start, skipping members, with
	// every remaining neuron kept with the probability that leaves the
	// expected count right; a final pass tops up the rounding.
	start := r.IntN(s.d)
	for pass := 0; pass < 2 && len(dst) < target; pass++ {
		free := s.d - len(dst)
		for j := 0; j < s.d && len(dst) < target; j++ {
			id := int32((start + j) % s.d)
			if m := s.stamp[id]; m == fillMark || m == labelMark {
				continue
			}
			if pass == 0 && r.IntN(free) >= target-len(dst) {
				free--
				continue
			}
			free--
			s.stamp[id] = fillMark
			dst = append(dst, id)
		}
	}
	return dst
}
