package filters

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/xdlgo/xps/model/hashmix"
)

// probabilityDomain keys the probability policy's hash apart from the
// partition, stripe and index hashes of the same (salt, id), which mix
// id ^ salt: without it, admission would correlate with placement.
const probabilityDomain = 0x61646d697373696f // "admissio"

// bloomDomain keys the count policy's Bloom locations apart from the
// other hashes of the same (salt, id), for the same reason.
const bloomDomain = 0x626c6f6f6d6c6f63 // "bloomloc"

type mode uint8

const (
	modeAll         mode = iota // none, and count with N = 1
	modeProbability             // stateless hash threshold
	modeCount                   // Bloom cascades in generations
)

// Filter is the admission filter of one table in one stripe owner. It
// holds the state of the count policy per virtual partition: the state of
// partition p is touched only by sightings of IDs of p, so whole
// partitions move between owners (AppendPartition, UnmarshalPartition,
// DropPartition).
//
// A Filter is not safe for concurrent use: the goroutine that owns the
// stripe makes every call (see the package doc). It holds no lock.
type Filter struct {
	spec       Spec
	sz         Sizing
	mode       mode
	salt       uint64
	threshold  uint64 // modeProbability: admit iff hash < threshold (unless all)
	all        bool   // modeProbability with P = 1
	partitions int
	parts      []*partState // modeCount: by partition, nil until sighted; nil until any is
	locs       [maxHashes]uint64
}

// partState is the count policy's state of one partition: up to
// Generations generations, oldest first, the last one current.
type partState struct {
	gens []*generation
}

// generation is Levels Bloom filters over one slab of words, and the
// number of insertions into each.
type generation struct {
	words   []uint64             // Levels x FilterBits/64
	levels  []*bloom.BloomFilter // levels[j] holds words[j*W:(j+1)*W]
	inserts []uint32
}

// New returns the filter of spec for a table with the given salt (the
// shard passes ams.TableHash of the table's name, so that the probability
// policy's subset depends on the table and on nothing else) over the
// given number of virtual partitions. It applies the defaults to a copy of
// spec and fails with an error wrapping ErrBadPolicy when it is invalid.
func New(spec Spec, salt uint64, partitions int) (*Filter, error) {
	spec.EnsureDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if partitions < 1 || partitions > MaxPartitions {
		return nil, fmt.Errorf("%w: %d partitions, want [1, %d]", ErrBadPolicy, partitions, MaxPartitions)
	}
	f := &Filter{spec: spec, sz: spec.Sizing(), salt: salt, partitions: partitions}
	switch {
	case spec.Kind == KindProbability:
		f.mode = modeProbability
		if spec.P >= 1 {
			f.all = true
		} else {
			// P < 1 is at most 1 - 2^-53, so P x 2^64 fits a uint64.
			f.threshold = uint64(math.Ldexp(spec.P, 64))
		}
	case spec.Kind == KindCount && spec.N >= 2:
		f.mode = modeCount
	default:
		f.mode = modeAll
	}
	return f, nil
}

// Spec returns the filter's spec, defaults applied.
func (f *Filter) Spec() Spec { return f.spec }

// Sizing returns the geometry of the filter's partition states (zero
// unless the policy is count with N >= 2).
func (f *Filter) Sizing() Sizing { return f.sz }

// Stateful reports whether the filter keeps partition states: the count
// policy with N >= 2. The states of other filters are empty.
func (f *Filter) Stateful() bool { return f.mode == modeCount }

// Admit records a sighting of id, an ID of virtual partition part, and
// reports whether the ID is admitted now: whether the table should create
// its row. Call it for a sighting of an ID that has no row (a pull that
// would create it, a push to it); each call is one sighting. It panics
// when part is not below the partitions given to New.
//
// For the count policy it is, in effect, this reference loop over the
// partition's generations g (oldest first, the last one current, each a
// cascade of N-1 Bloom filters level[0..N-2]):
//
//	credited := 0
//	for _, g := range gens {
//		for j := 0; j < N-1 && g.level[j].Test(id); j++ {
//			credited++ // depth of id in g: its sightings recorded in g
//		}
//	}
//	if credited >= N-1 {
//		return true // this is the N-th sighting (or later)
//	}
//	cur.level[depth of id in cur].Add(id) // record this sighting
//	if that level has had Capacity insertions {
//		drop the oldest generation if there are Generations; begin a new one
//	}
//	return false
//
// It stops probing once N-1 sightings are credited, and records with
// TestOrAdd as it walks the current generation.
func (f *Filter) Admit(part uint32, id uint64) bool {
	f.checkPart(part)
	switch f.mode {
	case modeProbability:
		return f.all || hashmix.Hash3(probabilityDomain, f.salt, id) < f.threshold
	case modeCount:
		return f.admitCount(part, id)
	default:
		return true
	}
}

// Count returns the number of earlier sightings the filter credits id of
// partition part with, at most N-1 (the count at which the next sighting
// is admitted): a read that records nothing. It is 0 for the stateless
// policies. It panics when part is not below the partitions given to New.
func (f *Filter) Count(part uint32, id uint64) int {
	f.checkPart(part)
	if f.mode != modeCount || f.parts == nil || f.parts[part] == nil {
		return 0
	}
	locs := f.locate(id)
	need, c := f.sz.Levels, 0
	for _, g := range f.parts[part].gens {
		if c += g.depth(locs, need-c); c >= need {
			break
		}
	}
	return c
}

func (f *Filter) checkPart(part uint32) {
	if int(part) >= f.partitions {
		panic(fmt.Sprintf("filters: partition %d of a filter over %d partitions", part, f.partitions))
	}
}

// locate returns the Bloom locations of id, the same in every filter of
// the policy (every generation and level of every partition has m =
// FilterBits bits and k = Hashes hashes): one hash of (salt, id) per
// sighting, however many filters it probes. They are k double-hashing
// probes h + i*d (Kirsch and Mitzenmacher), each mapped onto [0, m) by
// the high word of its product with m. The slice is f's buffer, valid
// until the next call.
func (f *Filter) locate(id uint64) []uint64 {
	h := hashmix.Hash3(bloomDomain, f.salt, id)
	d := hashmix.Mix64(h) | 1
	m := uint64(f.sz.FilterBits)
	locs := f.locs[:f.sz.Hashes]
	for i := range locs {
		locs[i], _ = bits.Mul64(h, m)
		h += d
	}
	return locs
}

func (f *Filter) admitCount(part uint32, id uint64) bool {
	ps := f.state(part)
	locs := f.locate(id)
	need, c := f.sz.Levels, 0
	last := len(ps.gens) - 1
	for _, g := range ps.gens[:last] {
		if c += g.depth(locs, need-c); c >= need {
			return true
		}
	}
	cur := ps.gens[last]
	// c < need here; each level found raises c, so j stays below need.
	for j := 0; c < need; j++ {
		if !testOrAdd(cur.levels[j], locs) {
			cur.inserts[j]++
			if int(cur.inserts[j]) >= f.sz.Capacity {
				f.rotate(ps)
			}
			return false
		}
		c++
	}
	return true
}

// state returns the state of part, creating it with one empty generation
// at the partition's first sighting.
func (f *Filter) state(part uint32) *partState {
	if f.parts == nil {
		f.parts = make([]*partState, f.partitions)
	}
	ps := f.parts[part]
	if ps == nil {
		ps = &partState{gens: []*generation{f.newGeneration()}}
		f.parts[part] = ps
	}
	return ps
}

// rotate begins a new current generation, dropping the oldest when the
// partition has Generations: its slab is cleared and reused.
func (f *Filter) rotate(ps *partState) {
	if len(ps.gens) < f.sz.Generations {
		ps.gens = append(ps.gens, f.newGeneration())
		return
	}
	g := ps.gens[0]
	copy(ps.gens, ps.gens[1:])
	ps.gens[len(ps.gens)-1] = g
	clear(g.words)
	clear(g.inserts)
}

func (f *Filter) newGeneration() *generation {
	return f.generationOf(make([]uint64, f.sz.Levels*f.sz.FilterBits/64))
}

// generationOf returns the generation whose Bloom filters are the given
// words, Levels x FilterBits/64 of them, with zero insertion counts.
func (f *Filter) generationOf(words []uint64) *generation {
	w, m, k := f.sz.FilterBits/64, uint(f.sz.FilterBits), uint(f.sz.Hashes)
	g := &generation{words: words, levels: make([]*bloom.BloomFilter, f.sz.Levels),
		inserts: make([]uint32, f.sz.Levels)}
	for j := range g.levels {
		g.levels[j] = bloom.FromWithM(words[j*w:(j+1)*w:(j+1)*w], m, k)
	}
	return g
}

// depth returns how many leading levels of g hold the ID at locs, at
// most limit.
func (g *generation) depth(locs []uint64, limit int) int {
	for j := 0; j < limit; j++ {
		if !g.levels[j].TestLocations(locs) {
			return j
		}
	}
	return limit
}

// testOrAdd reports whether bf holds every location of locs (each below
// its m) and, when not, sets the missing ones: bloom/v3's TestOrAdd, for
// locations computed once (locate).
func testOrAdd(bf *bloom.BloomFilter, locs []uint64) bool {
	b, present := bf.BitSet(), true
	for _, l := range locs {
		if !b.Test(uint(l)) {
			present = false
			b.Set(uint(l))
		}
	}
	return present
}

// MemoryBytes returns the bytes the filter holds: the Bloom words and
// insertion counters of every partition state, and the index of
// partitions (8 bytes per partition once any state exists).
func (f *Filter) MemoryBytes() int {
	n := 8 * len(f.parts)
	for _, ps := range f.parts {
		if ps != nil {
			n += len(ps.gens) * f.generationBytes()
		}
	}
	return n
}

// generationBytes is the memory of one generation's words and counters.
func (f *Filter) generationBytes() int { return f.sz.Levels * (f.sz.FilterBits/8 + 4) }
