package datagen

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/xdlgo/xps/model/hashmix"
	"github.com/xdlgo/xps/reader"
)

// factorDim is the dimension of the teacher's interaction factors.
const factorDim = 4

// calibrationSamples is the number of samples the teacher's scales and bias
// are calibrated on.
const calibrationSamples = 4096

// Key derivation constants: each hidden quantity has its own key derived
// from WorldSeed, so that they are independent. The salts are arbitrary.
const (
	golden       = 0x9e3779b97f4a7c15
	saltWeight   = 0x5741_4754_5349_4748
	saltFactor   = 0x4641_4354_4f52_5321
	saltProfile  = 0x5052_4f46_494c_4521
	saltCalibrat = 0x4341_4c49_4252_4154
	saltDrift    = 0x4452_4946_5450_4841
)

// entry is one drawn feature: its field, Zipf rank, token and id. The
// token is the number written for the id in the files: the rank itself
// without drift, the id's position in the unbounded id space with it
// (drift.go); id is reader.FeatureID(field, decimal(tok)). wid keys the
// teacher's hidden weight and factors: the id of the rank's first
// generation, reader.FeatureID(field, decimal(rank)), which is id itself
// without drift.
type entry struct {
	field uint32
	rank  uint32
	tok   uint64
	id    uint64
	wid   uint64
}

// teacher is the hidden model; see the package documentation.
type teacher struct {
	bias        float64
	fieldWeight []float64 // per field, applied to the sum of the bag's weights
	first       float64   // scale of the first-order part
	inter       float64   // scale of the interaction <U, V>
	rankScale   float64
	weightKey   uint64
	factorKey   uint64
	itemField   uint32 // the item field of the interaction (user field is 0)
}

// decay is the shrinkage of the hidden weights of rank k.
func (t *teacher) decay(rank uint32) float64 { return 1 / math.Sqrt(1+float64(rank)/t.rankScale) }

// weight returns the hidden weight of feature e: approximately N(0, 1),
// shrunk by its rank.
func (t *teacher) weight(e entry) float64 {
	return Normalish(hashmix.Mix64(e.wid^t.weightKey)) * t.decay(e.rank)
}

// addFactor adds the hidden factor vector of feature e to v.
func (t *teacher) addFactor(v *[factorDim]float64, e entry) {
	d := t.decay(e.rank)
	for j := range v {
		v[j] += d * Normalish(hashmix.Mix64(e.wid^t.factorKey^uint64(j+1)*golden))
	}
}

// Generator draws samples. It is not safe for concurrent use.
type Generator struct {
	cfg      Config
	t        teacher
	rng      *rand.Rand // the sample stream (Seed)
	items    *rand.Zipf // item ranks, on rng
	prof     *rand.PCG  // a user's profile stream, reseeded per user
	profRand *rand.Rand
	profZipf *rand.Zipf
	poissonL float64 // exp(-(MeanBag-1))
	drift    drift   // the vocabulary's drift (off with DriftLifetime 0)
	now      uint64  // index in the stream of the sample being drawn

	remaining int      // samples left in the current user's run
	gFields   []uint32 // NextGroup's scratch
	gIDs      []uint64
	gValues   []float32
	user      []entry // the current user's features
	userFirst float64 // the user fields' part of the first-order sum
	userVec   [factorDim]float64
	item      []entry // scratch: the current sample's item features
	feats     []reader.Feature
	tok       []byte // scratch: a rank's decimal token
	line      []byte // scratch: a libFFM line
}

// New returns a generator for cfg (with defaults filled in). The teacher's
// scales are calibrated to cfg.LogitStd and cfg.InteractionShare, and its
// bias to cfg.CTR, on a fixed sample of the world (independent of cfg.Seed).
func New(cfg Config) (*Generator, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := newTeacher(&cfg)
	cal := newGenerator(&cfg, t, hashmix.Mix64(cfg.WorldSeed^saltCalibrat))
	first := make([]float64, calibrationSamples)
	inter := make([]float64, calibrationSamples)
	for i := range first {
		cal.remaining = 0 // a fresh user per sample: the marginal distribution
		_, _, first[i], inter[i] = cal.next()
	}
	share := max(cfg.InteractionShare, 0)
	// A degenerate world (a single possible sample) has no variance to scale.
	t.first, t.inter = 0, 0
	if sd := stddev(first); sd > 1e-9 {
		t.first = math.Sqrt(1-share) * cfg.LogitStd / sd
	}
	if sd := stddev(inter); sd > 1e-9 && share > 0 {
		t.inter = math.Sqrt(share) * cfg.LogitStd / sd
	}
	logits := first
	for i := range logits {
		logits[i] = t.first*first[i] + t.inter*inter[i]
	}
	t.bias = CalibrateBias(logits, cfg.CTR)
	return newGenerator(&cfg, t, cfg.Seed), nil
}

// newTeacher returns the teacher with unit scales and a zero bias.
func newTeacher(cfg *Config) teacher {
	t := teacher{
		weightKey:   hashmix.Mix64(cfg.WorldSeed ^ saltWeight),
		factorKey:   hashmix.Mix64(cfg.WorldSeed ^ saltFactor),
		itemField:   uint32(cfg.UserFields),
		fieldWeight: make([]float64, cfg.Fields),
		first:       1,
		inter:       1,
		rankScale:   cfg.RankScale,
	}
	for f := range t.fieldWeight {
		t.fieldWeight[f] = 0.5 + uniform(hashmix.Mix64(t.weightKey+uint64(f)*golden))
	}
	return t
}

func stddev(x []float64) float64 {
	var m, v float64
	for _, a := range x {
		m += a
	}
	m /= float64(len(x))
	for _, a := range x {
		v += (a - m) * (a - m)
	}
	return math.Sqrt(v / float64(len(x)))
}

func newGenerator(cfg *Config, t teacher, seed uint64) *Generator {
	g := &Generator{
		cfg:      *cfg,
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, hashmix.Mix64(seed^golden))),
		prof:     rand.NewPCG(0, 0),
		poissonL: math.Exp(-(cfg.MeanBag - 1)),
		drift:    newDrift(cfg),
	}
	imax := uint64(cfg.Vocab - 1)
	g.items = rand.NewZipf(g.rng, cfg.ZipfS, 1, imax)
	g.profRand = rand.New(g.prof)
	g.profZipf = rand.NewZipf(g.profRand, cfg.ZipfS, 1, imax)
	return g
}

// CalibrateBias returns b with mean(sigmoid(b + logits)) = ctr, by
// bisection: a teacher's bias for a target click rate (package seqgen's
// too).
func CalibrateBias(logits []float64, ctr float64) float64 {
	var m float64
	for _, s := range logits {
		m = max(m, math.Abs(s))
	}
	lo, hi := -m-50, m+50
	for range 100 {
		mid := (lo + hi) / 2
		var sum float64
		for _, s := range logits {
			sum += sigmoid(mid + s)
		}
		if sum/float64(len(logits)) < ctr {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Config returns the generator's configuration with defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Bias returns the teacher's calibrated bias (logit offset).
func (g *Generator) Bias() float64 { return g.t.bias }

// Generate appends n samples to ds and returns the teacher's click
// probability of each of them. Successive calls continue one stream:
// Generate(ds, a) then Generate(ds, b) appends what Generate(ds, a+b) would.
func (g *Generator) Generate(ds *reader.Dataset, n int) (probs []float32) {
	probs = make([]float32, n)
	for i := range probs {
		label, p, _, _ := g.next()
		probs[i] = float32(p)
		g.feats = g.feats[:0]
		for _, e := range g.user {
			g.feats = append(g.feats, reader.Feature{Field: e.field, ID: e.id, Value: 1})
		}
		for _, e := range g.item {
			g.feats = append(g.feats, reader.Feature{Field: e.field, ID: e.id, Value: 1})
		}
		ds.Append(label, g.feats)
	}
	return probs
}

// next draws one sample into g.user and g.item and returns its label, the
// teacher's click probability, and the two parts of its logit before scaling:
// the first-order sum and the interaction <U, V>.
func (g *Generator) next() (label float32, prob, first, inter float64) {
	if g.remaining == 0 {
		g.newUser()
	}
	g.remaining--
	first = g.userFirst
	g.item = g.item[:0]
	for f := g.cfg.UserFields; f < g.cfg.Fields; f++ {
		start := len(g.item)
		g.item = g.drawBag(g.items, g.rng, uint32(f), g.item)
		bag := g.item[start:]
		var s float64
		for _, e := range bag {
			s += g.t.weight(e)
		}
		first += g.t.fieldWeight[f] * s
		if uint32(f) == g.t.itemField {
			var v [factorDim]float64
			for _, e := range bag {
				g.t.addFactor(&v, e)
			}
			for j := range v {
				inter += v[j] * g.userVec[j]
			}
		}
	}
	prob = sigmoid(g.t.bias + g.t.first*first + g.t.inter*inter)
	if g.rng.Float64() < prob {
		label = 1
	}
	g.now++
	return label, prob, first, inter
}

// newUser starts a run: it picks a user and the run's length from the
// sample stream and draws the user's fields from the user's own stream.
func (g *Generator) newUser() {
	u := uint64(g.rng.IntN(g.cfg.Users))
	g.remaining = g.geometric()
	g.loadUser(u)
}

// loadUser draws user u's fields, a function of u and the world alone (and,
// with drift, of the time g.now, which picks the ids of the user's ranks),
// and their part of the teacher's logit.
func (g *Generator) loadUser(u uint64) {
	key := hashmix.Mix64(g.t.weightKey ^ saltProfile ^ u*golden)
	g.prof.Seed(key, hashmix.Mix64(key))
	g.user = g.user[:0]
	g.userFirst = 0
	g.userVec = [factorDim]float64{}
	for f := 0; f < g.cfg.UserFields; f++ {
		start := len(g.user)
		g.user = g.drawBag(g.profZipf, g.profRand, uint32(f), g.user)
		for _, e := range g.user[start:] {
			g.userFirst += g.t.fieldWeight[f] * g.t.weight(e)
			if f == 0 {
				g.t.addFactor(&g.userVec, e)
			}
		}
	}
}

// drawBag appends a bag of 1 + Poisson(MeanBag-1) distinct ids of field to
// dst. Duplicates are redrawn, a bounded number of times (the bag comes out
// smaller when the vocabulary is nearly exhausted).
func (g *Generator) drawBag(z *rand.Zipf, r *rand.Rand, field uint32, dst []entry) []entry {
	size := 1 + g.poisson(r)
	start := len(dst)
	for tries := 0; len(dst)-start < size && tries < 8*size; tries++ {
		rank := uint32(z.Uint64())
		dup := false
		for _, e := range dst[start:] {
			if e.rank == rank {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		g.tok = strconv.AppendUint(g.tok[:0], uint64(rank), 10)
		e := entry{field: field, rank: rank, tok: uint64(rank), id: reader.FeatureID(field, g.tok)}
		e.wid = e.id
		if g.drift.on() {
			e.tok = g.drift.token(field, rank, g.now)
			g.tok = strconv.AppendUint(g.tok[:0], e.tok, 10)
			e.id = reader.FeatureID(field, g.tok)
		}
		dst = append(dst, e)
	}
	return dst
}

// poisson draws Poisson(MeanBag-1) by Knuth's multiplication method.
func (g *Generator) poisson(r *rand.Rand) int {
	k := 0
	for p := r.Float64(); p > g.poissonL; p *= r.Float64() {
		k++
	}
	return k
}

// geometric draws a run length >= 1 with mean SamplesPerUser.
func (g *Generator) geometric() int {
	m := g.cfg.SamplesPerUser
	if m <= 1 {
		return 1
	}
	u := 1 - g.rng.Float64() // (0, 1]
	n := 1 + math.Floor(math.Log(u)/math.Log1p(-1/m))
	return int(min(n, 1<<40))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// uniform maps h to [0, 1).
func uniform(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// Normalish maps h to an approximately standard normal number: the
// Irwin-Hall sum of its four 16-bit lanes, centred and scaled to unit
// variance (range +-2*sqrt(3)). Package seqgen's world draws with it too.
func Normalish(h uint64) float64 {
	s := float64(h&0xffff) + float64(h>>16&0xffff) + float64(h>>32&0xffff) + float64(h>>48)
	return (s/65536 - 2) * math.Sqrt(3)
}

// NextGroup fills grp with the next samples of the stream as one 2-level
// sample group: level 1 holds the current user's fields (one line), level 0
// one line per sample with its item fields and label. The group holds the
// rest of the current user's run, at most max samples (max >= 1); the
// returned probabilities (appended to probs) are the teacher's click
// probabilities of its samples. Successive calls draw exactly the samples
// Generate would, in the same order.
func (g *Generator) NextGroup(grp *reader.Group, max int, probs []float32) []float32 {
	grp.Reset(2)
	for n := 0; n < max; n++ {
		if n > 0 && g.remaining == 0 {
			break
		}
		label, p, _, _ := g.next()
		if n == 0 {
			g.addEntries(grp, 1, -1, g.user)
		}
		g.addEntries(grp, 0, 0, g.item)
		grp.AddLabels(label)
		probs = append(probs, float32(p))
	}
	return probs
}

func (g *Generator) addEntries(grp *reader.Group, level int, parent int32, list []entry) {
	g.gFields, g.gIDs, g.gValues = g.gFields[:0], g.gIDs[:0], g.gValues[:0]
	for _, e := range list {
		g.gFields = append(g.gFields, e.field)
		g.gIDs = append(g.gIDs, e.id)
		g.gValues = append(g.gValues, 1)
	}
	grp.AddLine(level, parent, g.gFields, g.gIDs, g.gValues)
}

// TestStream and ValidStream are the streams of Fork that a job's test
// and validation sets are drawn from.
const (
	TestStream  = 1
	ValidStream = 2
)

// Fork returns a generator of the same world (teacher, calibration and
// bias) that draws an independent stream of samples, numbered stream: a
// test set that needs no training sample generated before it.
func (g *Generator) Fork(stream uint64) *Generator {
	return newGenerator(&g.cfg, g.t, hashmix.Mix64(g.cfg.Seed^(stream*golden)))
}
