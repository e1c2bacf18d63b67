package seqgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/xdlgo/xps/model/hashmix"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// The fields of a sample (see the package documentation).
const (
	FieldUser     = 0 // level 1: the user id
	FieldSegment  = 1 // level 1: the user's segment
	FieldHistItem = 2 // level 1: history items, oldest first
	FieldHistCat  = 3 // level 1: their categories
	FieldNegItem  = 4 // level 1: negative history items
	FieldNegCat   = 5 // level 1: their categories
	FieldItem     = 6 // level 0: the candidate item
	FieldCat      = 7 // level 0: its category
	NumFields     = 8
)

// SequenceTargets returns, for each sequence field, the field whose tokens
// it shares: the items of fields 2 and 4 are those of field 6, the
// categories of fields 3 and 5 those of field 7.
func SequenceTargets() map[uint32]uint32 {
	return map[uint32]uint32{FieldHistItem: FieldItem, FieldHistCat: FieldCat, FieldNegItem: FieldItem, FieldNegCat: FieldCat}
}

// calibrationSamples is the number of candidates the bias is calibrated on.
const calibrationSamples = 20000

// Generator draws groups of samples. It is not safe for concurrent use;
// generators of one world (Fork) may run in parallel.
type Generator struct {
	w   *world
	cfg Config
	rng *rand.Rand

	// The current group: a user, a history snapshot, candidates left.
	user      uint64
	prof      profile
	hist      []int32
	negs      []int32
	remaining int
	textOK    bool     // groupTok and ffmTok hold the current group's tokens
	idsOK     bool     // lineFields and lineIDs hold them
	groupTok  []byte   // " f:tok" for the level-1 features
	ffmTok    []byte   // " f:tok:1" for the same
	lineF     []uint32 // the level-1 line's fields, ids and values
	lineIDs   []uint64
	lineVals  []float32
	dots      []float64 // scratch of the teacher
	tok, line []byte    // scratch

	// The current sample.
	cand  int32
	label float32
	prob  float64
}

// New returns a generator for cfg (with defaults filled in), its
// teacher's bias calibrated to cfg.CTR on a fixed sample of the world
// (independent of cfg.Seed).
func New(cfg Config) (*Generator, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := newWorld(&cfg)
	cal := newGenerator(w, hashmix.Mix64(w.key^saltCalibrate))
	logits := make([]float64, calibrationSamples)
	for i := range logits {
		cal.next()
		logits[i] = cal.prof.term + cfg.Scale*w.attend(cal.hist, cal.cand, cfg.Beta, cfg.Gamma, cal.dots)
	}
	w.bias = datagen.CalibrateBias(logits, cfg.CTR)
	return newGenerator(w, cfg.Seed), nil
}

func newGenerator(w *world, seed uint64) *Generator {
	g := &Generator{w: w, cfg: w.cfg, rng: rand.New(rand.NewPCG(seed, hashmix.Mix64(seed^golden)))}
	g.cfg.Seed = seed
	g.dots = make([]float64, w.cfg.MaxLen)
	return g
}

// TestStream and ValidStream are the streams of Fork that test and
// validation sets are drawn from.
const (
	TestStream  = 1
	ValidStream = 2
)

// Fork returns a generator of the same world (items, users, teacher and
// bias) drawing an independent stream, numbered stream: Seed becomes
// Mix64(Seed ^ stream*golden), as datagen.Fork does.
func (g *Generator) Fork(stream uint64) *Generator {
	return newGenerator(g.w, hashmix.Mix64(g.cfg.Seed^(stream*golden)))
}

// Config returns the generator's configuration with defaults filled in
// (Seed is its stream's).
func (g *Generator) Config() Config { return g.cfg }

// Bias returns the teacher's calibrated bias.
func (g *Generator) Bias() float64 { return g.w.bias }

// next draws the next sample (starting a new group when the current one
// has no candidate left) and reports whether it starts a group.
func (g *Generator) next() (first bool) {
	if g.remaining == 0 {
		g.newGroup()
		first = true
	}
	g.remaining--
	g.cand = g.candidate()
	g.prob = sigmoid(g.w.logit(&g.prof, g.hist, g.cand, g.dots))
	g.label = 0
	if g.rng.Float64() < g.prob {
		g.label = 1
	}
	return first
}

// newGroup draws a user, a history snapshot with its negatives, and the
// number of candidates.
func (g *Generator) newGroup() {
	cfg := &g.cfg
	g.user = uint64(g.rng.IntN(cfg.Users))
	g.w.loadProfile(g.user, &g.prof)
	n := cfg.MinLen() + g.rng.IntN(cfg.MaxLen-cfg.MinLen()+1)
	g.hist = g.hist[:0]
	for t := range n {
		g.hist = append(g.hist, g.historyItem(t, n))
	}
	g.negs = g.negs[:0]
	for t := range n {
		g.negs = append(g.negs, g.negative(g.hist[t]))
	}
	g.remaining = g.geometric()
	g.textOK, g.idsOK = false, false
}

// historyItem draws the t-th of n history items: with probability Noise
// any item, else an item of an interest: with Drift the position's,
// interest floor(m*t/n) (with probability 1-DriftMix), else one drawn by
// the user's weights.
func (g *Generator) historyItem(t, n int) int32 {
	r := g.rng
	if r.Float64() < g.cfg.Noise {
		return int32(r.IntN(g.cfg.Items))
	}
	var k int
	if g.cfg.Drift && r.Float64() >= g.cfg.DriftMix {
		k = len(g.prof.interests) * t / n
	} else {
		k = g.prof.pick(r.Float64())
	}
	return g.w.itemOf(g.prof.interests[k], r)
}

// negative draws a random item that is not in the history (16 tries),
// and in any case not pos.
func (g *Generator) negative(pos int32) int32 {
	for range 16 {
		if c := int32(g.rng.IntN(g.cfg.Items)); !slices.Contains(g.hist, c) {
			return c
		}
	}
	return (pos + 1 + int32(g.rng.IntN(g.cfg.Items-1))) % int32(g.cfg.Items)
}

// candidate draws a candidate: with probability InterestShare an item of
// one of the user's interests (with Drift the current one with
// probability CurrentShare, else an earlier one uniformly; without, one
// drawn by the weights), else any item.
func (g *Generator) candidate() int32 {
	r := g.rng
	if r.Float64() >= g.cfg.InterestShare {
		return int32(r.IntN(g.cfg.Items))
	}
	m := len(g.prof.interests)
	var k int
	switch {
	case !g.cfg.Drift:
		k = g.prof.pick(r.Float64())
	case r.Float64() < g.cfg.CurrentShare:
		k = m - 1
	default:
		k = r.IntN(m - 1)
	}
	return g.w.itemOf(g.prof.interests[k], r)
}

// geometric draws a number of candidates >= 1 with mean MeanCandidates.
func (g *Generator) geometric() int {
	m := g.cfg.MeanCandidates
	if m <= 1 {
		return 1
	}
	u := 1 - g.rng.Float64() // (0, 1]
	return int(min(1+math.Floor(math.Log(u)/math.Log1p(-1/m)), 1<<30))
}

// level1 calls fn with the field and token of every level-1 feature of
// the current group, in order: user, segment, then each sequence field
// whole.
func (g *Generator) level1(fn func(field uint32, tok uint64)) {
	fn(FieldUser, g.user)
	fn(FieldSegment, uint64(g.prof.segment))
	for _, it := range g.hist {
		fn(FieldHistItem, uint64(it))
	}
	for _, it := range g.hist {
		fn(FieldHistCat, uint64(g.w.category(it)))
	}
	for _, it := range g.negs {
		fn(FieldNegItem, uint64(it))
	}
	for _, it := range g.negs {
		fn(FieldNegCat, uint64(g.w.category(it)))
	}
}

// NextGroup fills grp with the next samples of the stream as one 2-level
// sample group: level 1 holds the user and history line, level 0 one line
// per candidate (fields 6 and 7) with its label. The group holds the rest
// of the current group's candidates, at most max (max >= 1); the teacher's
// probabilities of its samples are appended to probs. Successive calls
// draw exactly the samples Write writes, in the same order.
func (g *Generator) NextGroup(grp *reader.Group, max int, probs []float32) []float32 {
	grp.Reset(2)
	for n := 0; n < max; n++ {
		if n > 0 && g.remaining == 0 {
			break
		}
		g.next()
		if n == 0 {
			g.level1IDs()
			grp.AddLine(1, -1, g.lineF, g.lineIDs, g.lineVals)
		}
		fields, vals := [2]uint32{FieldItem, FieldCat}, [2]float32{1, 1}
		var ids [2]uint64
		g.tok = strconv.AppendUint(g.tok[:0], uint64(g.cand), 10)
		ids[0] = reader.FeatureID(FieldItem, g.tok)
		g.tok = strconv.AppendUint(g.tok[:0], uint64(g.w.category(g.cand)), 10)
		ids[1] = reader.FeatureID(FieldCat, g.tok)
		grp.AddLine(0, 0, fields[:], ids[:], vals[:])
		grp.AddLabels(g.label)
		probs = append(probs, float32(g.prob))
	}
	return probs
}

// level1IDs fills lineF, lineIDs and lineVals for the current group.
func (g *Generator) level1IDs() {
	if g.idsOK {
		return
	}
	g.lineF, g.lineIDs, g.lineVals = g.lineF[:0], g.lineIDs[:0], g.lineVals[:0]
	g.level1(func(f uint32, tok uint64) {
		g.tok = strconv.AppendUint(g.tok[:0], tok, 10)
		g.lineF = append(g.lineF, f)
		g.lineIDs = append(g.lineIDs, reader.FeatureID(f, g.tok))
		g.lineVals = append(g.lineVals, 1)
	})
	g.idsOK = true
}
