package filters

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/xdlgo/xps/model/hashmix"
)

// testSalt stands for ams.TableHash of a table's name.
const testSalt = 0x5eed7ab1e

// partOf stands for ams.Partition: the partition of id among n.
func partOf(id uint64, n int) uint32 { return uint32(hashmix.Mix64(id^testSalt) % uint64(n)) }

// fresh returns the IDs Mix64(from), ..., Mix64(from+n-1): distinct for
// distinct arguments (Mix64 is a bijection), so ranges that do not
// overlap give IDs never seen before.
func fresh(from uint64, n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = hashmix.Mix64(from + uint64(i))
	}
	return ids
}

func mustNew(t testing.TB, s Spec, partitions int) *Filter {
	t.Helper()
	f, err := New(s, testSalt, partitions)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// binomialMax is a bound that Binomial(n, p) exceeds with probability
// below 1e-5 (mean plus 4.5 standard deviations, plus 3 for small means).
func binomialMax(n int, p float64) int {
	mean := float64(n) * p
	return int(math.Ceil(mean + 4.5*math.Sqrt(mean*(1-p)) + 3))
}

// binomialMin is the matching lower bound.
func binomialMin(n int, p float64) int {
	mean := float64(n) * p
	return int(math.Floor(mean - 4.5*math.Sqrt(mean*(1-p)) - 3))
}

func TestStatelessPolicies(t *testing.T) {
	for _, s := range []Spec{{}, {Kind: KindCount, N: 1}, {Kind: KindProbability, P: 1}} {
		f := mustNew(t, s, 4)
		for _, id := range fresh(0, 1000) {
			if !f.Admit(partOf(id, 4), id) {
				t.Fatalf("%+v refused %#x", s, id)
			}
		}
		if f.Stateful() || f.MemoryBytes() != 0 || f.Count(0, 1) != 0 || len(f.Partitions(nil)) != 0 {
			t.Errorf("%+v: stateful %v, %d bytes, count %d", s, f.Stateful(), f.MemoryBytes(), f.Count(0, 1))
		}
		if err := f.UnmarshalPartition(3, f.MarshalPartition(3)); err != nil {
			t.Errorf("%+v: the empty state does not load: %v", s, err)
		}
	}
}

// TestProbabilityRate checks the share admitted over 1e5 IDs against the
// binomial, and that a decision is the same on every call and partition.
func TestProbabilityRate(t *testing.T) {
	const n = 100_000
	for _, p := range []float64{0.001, 0.3, 0.9} {
		f := mustNew(t, Spec{Kind: KindProbability, P: p}, 8)
		admitted := 0
		for _, id := range fresh(1<<40, n) {
			a := f.Admit(partOf(id, 8), id)
			if a != f.Admit(0, id) || a != f.Admit(7, id) {
				t.Fatalf("p=%v: %#x decided differently on another call", p, id)
			}
			if a {
				admitted++
			}
		}
		if lo, hi := binomialMin(n, p), binomialMax(n, p); admitted < lo || admitted > hi {
			t.Errorf("p=%v: %d of %d admitted, want [%d, %d]", p, admitted, n, lo, hi)
		}
	}
}

// TestProbabilityAgrees: two workers with the same table agree on every
// ID; another table's salt picks another subset; the subset does not
// lean on placement, which hashes Mix64(id ^ salt) too: partitions take
// its residue, stripes its high bits.
func TestProbabilityAgrees(t *testing.T) {
	const n, p = 20_000, 0.5
	spec := Spec{Kind: KindProbability, P: p}
	w1, w2 := mustNew(t, spec, 2), mustNew(t, spec, 2)
	other, err := New(spec, testSalt+1, 2)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	var byPlace [4][2]int // [partition parity, 2 + stripe half][admitted]
	for _, id := range fresh(7<<40, n) {
		part := partOf(id, 2)
		a := w1.Admit(part, id)
		if a != w2.Admit(part, id) {
			t.Fatalf("two workers disagree on %#x", id)
		}
		if a != other.Admit(part, id) {
			differ++
		}
		byPlace[part][b2i(a)]++
		byPlace[2+hashmix.Mix64(id^testSalt)>>63][b2i(a)]++
	}
	// Independent subsets differ on 2p(1-p) of the IDs.
	if lo, hi := binomialMin(n, 2*p*(1-p)), binomialMax(n, 2*p*(1-p)); differ < lo || differ > hi {
		t.Errorf("another salt changed %d decisions of %d, want [%d, %d]", differ, n, lo, hi)
	}
	for place, c := range byPlace {
		if total := c[0] + c[1]; c[1] < binomialMin(total, p) || c[1] > binomialMax(total, p) {
			t.Errorf("placement class %d: %d of %d admitted", place, c[1], total)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sightRounds sights every ID once per round, in a new order each round,
// skipping IDs already admitted (the shard would have created their
// rows), and returns the round in which each ID was admitted (0: never).
func sightRounds(f *Filter, ids []uint64, rounds, partitions int) []int {
	at := make([]int, len(ids))
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	r := hashmix.NewStream(1, 2, 3)
	for round := 1; round <= rounds; round++ {
		for i := len(order) - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
		for _, i := range order {
			if at[i] == 0 && f.Admit(partOf(ids[i], partitions), ids[i]) {
				at[i] = round
			}
		}
	}
	return at
}

// TestCountAdmitsAtTheNthSighting: with no rotation every ID is admitted
// by its n-th sighting, exactly (Bloom filters have no false negatives);
// earlier admissions are few, bounded by the rate.
func TestCountAdmitsAtTheNthSighting(t *testing.T) {
	const partitions = 16
	for _, n := range []int{2, 3, 5} {
		spec := Spec{Kind: KindCount, N: n}
		f := mustNew(t, spec, partitions)
		// Half the capacity per partition on average: no partition fills.
		ids := fresh(uint64(n)<<40, partitions*f.Sizing().Capacity/2)
		at := sightRounds(f, ids, n+1, partitions)
		early := 0
		for i, r := range at {
			switch {
			case r == 0 || r > n:
				t.Fatalf("n=%d: %#x admitted at sighting %d", n, ids[i], r)
			case r < n:
				early++
			}
		}
		for _, p := range f.Partitions(nil) {
			if g := len(f.parts[p].gens); g != 1 {
				t.Fatalf("n=%d: partition %d rotated (%d generations): the test needs none", n, p, g)
			}
		}
		// Each of an ID's first n-1 sightings is credited with a phantom
		// with probability below rate (below rate/G here: one generation).
		if hi := binomialMax(len(ids)*(n-1), DefaultFalsePositiveRate); early > hi {
			t.Errorf("n=%d: %d of %d IDs admitted early, want at most %d", n, early, len(ids), hi)
		}
	}
}

// fillWorstCase sights fresh IDs in partition 0 of f (one partition)
// until every generation exists and the current one is one insertion
// short of rotating: every filter an ID is probed in is at its fullest.
// It returns the next unused argument of fresh and the admissions.
func fillWorstCase(t *testing.T, f *Filter, from uint64) (next uint64, admitted, sightings int) {
	t.Helper()
	z := f.Sizing()
	// Each generation fills within Levels x Capacity recorded sightings.
	for limit := 4 * z.Generations * z.Levels * z.Capacity; ; {
		ps := f.state(0)
		cur := ps.gens[len(ps.gens)-1]
		if len(ps.gens) == z.Generations && int(slices.Max(cur.inserts)) == z.Capacity-1 {
			return from, admitted, sightings
		}
		if sightings > limit {
			t.Fatalf("%d fresh sightings did not fill %d generations of capacity %d", sightings, z.Generations, z.Capacity)
		}
		if f.Admit(0, hashmix.Mix64(from)) {
			admitted++
		}
		from++
		sightings++
	}
}

// TestCountFalsePositiveRate measures, at the fullest load, how often a
// never-seen ID is credited with a sighting (probed with Count, which
// records nothing) against the configured rate, with a binomial margin;
// and that the filters are sized to the rate, not far below it.
func TestCountFalsePositiveRate(t *testing.T) {
	const probes = 200_000
	for _, spec := range []Spec{
		{Kind: KindCount, N: 2, FalsePositiveRate: 0.01, Generations: 2},
		{Kind: KindCount, N: 3, FalsePositiveRate: 0.02, Generations: 3, MaxPartitionBytes: 4096},
	} {
		f := mustNew(t, spec, 1)
		from, admitted, sightings := fillWorstCase(t, f, 0)
		rate := spec.FalsePositiveRate
		if hi := binomialMax(sightings, rate); admitted > hi {
			t.Errorf("%+v: %d of %d fresh IDs admitted while filling, want at most %d", spec, admitted, sightings, hi)
		}
		credited := [3]int{} // fresh IDs credited with 0, 1, 2+ phantom sightings
		for _, id := range fresh(from+1<<32, probes) {
			credited[min(f.Count(0, id), 2)]++
		}
		phantom := credited[1] + credited[2]
		t.Logf("%+v: %d of %d probes credited (%.4f), %d twice", spec, phantom, probes, float64(phantom)/probes, credited[2])
		if hi := binomialMax(probes, rate); phantom > hi {
			t.Errorf("%+v: %d of %d probes credited with a phantom sighting, want at most %d", spec, phantom, probes, hi)
		}
		if lo := int(rate / 2 * probes); phantom < lo {
			t.Errorf("%+v: only %d of %d probes credited: the filters are oversized for the rate", spec, phantom, probes)
		}
		if hi := binomialMax(probes, rate*rate); spec.N > 2 && credited[2] > hi {
			t.Errorf("%+v: %d of %d probes credited twice, want at most %d", spec, credited[2], probes, hi)
		}
	}
}

// TestCountKeepsAndForgetsSightings checks invariant 6: sightings survive
// (G-1) x Capacity later recorded sightings of the partition, exactly,
// and are gone once G generations began after them.
func TestCountKeepsAndForgetsSightings(t *testing.T) {
	spec := Spec{Kind: KindCount, N: 3, Generations: 3, MaxPartitionBytes: 4096}
	f := mustNew(t, spec, 1)
	z := f.Sizing()
	const kept = 100
	xs := fresh(0, kept)
	sightAll := func(ids []uint64) (admitted int) {
		for _, id := range ids {
			admitted += b2i(f.Admit(0, id))
		}
		return admitted
	}
	sightAll(xs)
	sightAll(xs)
	// Recorded since the first x: at most 2*kept-1 by the xs, one per
	// fresh ID at most.
	sightAll(fresh(1<<32, (z.Generations-1)*z.Capacity-2*kept+1))
	if got := sightAll(xs); got != kept {
		t.Fatalf("%d of %d IDs sighted twice admitted at their third sighting after %d recorded, want all",
			got, kept, (z.Generations-1)*z.Capacity)
	}
	ys := fresh(2<<32, 1000)
	sightAll(ys)
	sightAll(ys)
	ps := f.state(0)
	rotations, cur := 0, ps.gens[len(ps.gens)-1]
	for next := uint64(3 << 32); rotations < z.Generations; next++ {
		if next-3<<32 > uint64(4*z.Generations*z.Levels*z.Capacity) {
			t.Fatalf("%d fresh sightings began %d generations, want %d", next-3<<32, rotations, z.Generations)
		}
		f.Admit(0, hashmix.Mix64(next))
		if c := ps.gens[len(ps.gens)-1]; c != cur {
			rotations, cur = rotations+1, c
		}
	}
	credited := 0
	for _, y := range ys {
		credited += b2i(f.Count(0, y) > 0)
	}
	if hi := binomialMax(len(ys), spec.withDefaults().FalsePositiveRate); credited > hi {
		t.Errorf("%d of %d forgotten IDs still credited, want at most %d (phantoms)", credited, len(ys), hi)
	}
}

// stream returns sightings of IDs drawn with a skew from a pool of
// poolSize (small IDs often, large ones rarely), with their partitions.
func stream(seed uint64, n, poolSize, partitions int) (ids []uint64, parts []uint32) {
	r := hashmix.NewStream(seed, 0, 0)
	for range n {
		id := hashmix.Mix64(uint64(r.IntN(r.IntN(poolSize) + 1)))
		ids, parts = append(ids, id), append(parts, partOf(id, partitions))
	}
	return ids, parts
}

// smallCount is a count spec whose partitions rotate within a few
// thousand sightings.
var smallCount = Spec{Kind: KindCount, N: 3, MaxPartitionBytes: 1024}

// TestTwoWorkersAgree: two filters fed the same sightings decide the same
// and write the same states (invariant 2), rotations included.
func TestTwoWorkersAgree(t *testing.T) {
	const partitions = 8
	a, b := mustNew(t, smallCount, partitions), mustNew(t, smallCount, partitions)
	ids, parts := stream(1, 60_000, 30_000, partitions)
	for i, id := range ids {
		if a.Admit(parts[i], id) != b.Admit(parts[i], id) {
			t.Fatalf("sighting %d (%#x): the filters disagree", i, id)
		}
	}
	checkSameStates(t, a, b, partitions)
	rotated := 0
	for _, ps := range a.parts {
		rotated += b2i(len(ps.gens) == smallCount.withDefaults().Generations)
	}
	if rotated != partitions {
		t.Fatalf("%d of %d partitions rotated: the test should exercise rotation", rotated, partitions)
	}
}

func (s Spec) withDefaults() Spec {
	s.EnsureDefaults()
	return s
}

// checkSameStates checks that a and b hold state for the same partitions
// and write the same bytes for every one.
func checkSameStates(t *testing.T, a, b *Filter, partitions int) {
	t.Helper()
	if pa, pb := a.Partitions(nil), b.Partitions(nil); !slices.Equal(pa, pb) {
		t.Fatalf("partitions with state: %v and %v", pa, pb)
	}
	for p := range uint32(partitions) {
		if !bytes.Equal(a.MarshalPartition(p), b.MarshalPartition(p)) {
			t.Errorf("partition %d: the states differ", p)
		}
	}
}

// TestRoundTripContinues: a filter loaded from another's states decides
// on as that one does.
func TestRoundTripContinues(t *testing.T) {
	const partitions = 8
	a, b := mustNew(t, smallCount, partitions), mustNew(t, smallCount, partitions)
	ids, parts := stream(2, 80_000, 30_000, partitions)
	half := len(ids) / 2
	for i := range half {
		a.Admit(parts[i], ids[i])
	}
	for p := range uint32(partitions) {
		if err := b.UnmarshalPartition(p, a.MarshalPartition(p)); err != nil {
			t.Fatal(err)
		}
		if err := a.UnmarshalPartition(p, a.MarshalPartition(p)); err != nil {
			t.Fatal(err)
		}
	}
	checkSameStates(t, a, b, partitions)
	for i := half; i < len(ids); i++ {
		if a.Admit(parts[i], ids[i]) != b.Admit(parts[i], ids[i]) {
			t.Fatalf("sighting %d after the round trip: the filters disagree", i)
		}
	}
	checkSameStates(t, a, b, partitions)
}

// move hands partition p from one owner to another, as a restore onto
// another layout does.
func move(t *testing.T, from, to *Filter, p uint32) {
	t.Helper()
	if err := to.UnmarshalPartition(p, from.MarshalPartition(p)); err != nil {
		t.Fatal(err)
	}
	from.DropPartition(p)
}

// TestRestoreOntoAnotherLayout: one owner of all partitions against the
// same sightings split over three owners, then over two, whole partitions
// moved between them (invariant 3): every decision is the same.
func TestRestoreOntoAnotherLayout(t *testing.T) {
	const partitions = 12
	one := mustNew(t, smallCount, partitions)
	ids, parts := stream(3, 90_000, 40_000, partitions)
	third := len(ids) / 3
	for i := range third {
		one.Admit(parts[i], ids[i])
	}
	owners := func(n int) []*Filter {
		fs := make([]*Filter, n)
		for i := range fs {
			fs[i] = mustNew(t, smallCount, partitions)
		}
		return fs
	}
	three, two := owners(3), owners(2)
	for p := range uint32(partitions) {
		if err := three[p%3].UnmarshalPartition(p, one.MarshalPartition(p)); err != nil {
			t.Fatal(err)
		}
	}
	for i := third; i < 2*third; i++ {
		if one.Admit(parts[i], ids[i]) != three[parts[i]%3].Admit(parts[i], ids[i]) {
			t.Fatalf("sighting %d on three owners: a decision differs", i)
		}
	}
	for p := range uint32(partitions) {
		move(t, three[p%3], two[p%2], p)
	}
	for i, f := range three {
		if got := f.Partitions(nil); len(got) != 0 || f.MemoryBytes() != 8*partitions {
			t.Errorf("owner %d of three kept partitions %v, %d bytes", i, got, f.MemoryBytes())
		}
	}
	for i := 2 * third; i < len(ids); i++ {
		if one.Admit(parts[i], ids[i]) != two[parts[i]%2].Admit(parts[i], ids[i]) {
			t.Fatalf("sighting %d on two owners: a decision differs", i)
		}
	}
	for p := range uint32(partitions) {
		if !bytes.Equal(one.MarshalPartition(p), two[p%2].MarshalPartition(p)) {
			t.Errorf("partition %d: the state differs from the single owner's", p)
		}
	}
}

// TestMemoryBound drives every partition through many rotations and
// checks invariant 5; and that a full filter admits without allocating.
func TestMemoryBound(t *testing.T) {
	const partitions = 4
	f := mustNew(t, smallCount, partitions)
	z := f.Sizing()
	n := partitions * z.Capacity * z.Generations * 4
	for _, id := range fresh(0, n) {
		f.Admit(partOf(id, partitions), id)
	}
	perPartition := z.Generations * z.Levels * (z.FilterBits/8 + 4)
	if got, want := f.MemoryBytes(), partitions*(8+perPartition); got != want {
		t.Errorf("MemoryBytes = %d, want %d (every partition at its %d generations)", got, want, z.Generations)
	}
	for p, ps := range f.parts {
		bits := 0
		for _, g := range ps.gens {
			bits += 64 * len(g.words)
		}
		if len(ps.gens) != z.Generations || bits/8 != z.PartitionBytes || bits/8 > smallCount.MaxPartitionBytes {
			t.Errorf("partition %d: %d generations, %d bytes of Bloom bits for a bound of %d",
				p, len(ps.gens), bits/8, smallCount.MaxPartitionBytes)
		}
	}
	next := uint64(n)
	allocs := testing.AllocsPerRun(10_000, func() {
		id := hashmix.Mix64(next)
		next++
		f.Admit(partOf(id, partitions), id)
	})
	if allocs != 0 {
		t.Errorf("Admit allocates %v times per call on a full filter", allocs)
	}
}

func TestPartitionOutOfRangePanics(t *testing.T) {
	for _, s := range []Spec{{}, {Kind: KindProbability, P: 0.5}, smallCount} {
		f := mustNew(t, s, 3)
		for name, call := range map[string]func(){
			"Admit":              func() { f.Admit(3, 1) },
			"Count":              func() { f.Count(3, 1) },
			"AppendPartition":    func() { f.AppendPartition(nil, 3) },
			"UnmarshalPartition": func() { _ = f.UnmarshalPartition(3, nil) },
			"DropPartition":      func() { f.DropPartition(3) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: %s of partition 3 of 3 did not panic", s.Kind, name)
					}
				}()
				call()
			}()
		}
	}
	for _, n := range []int{0, -1, MaxPartitions + 1} {
		if _, err := New(Spec{}, 0, n); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("New with %d partitions: %v, want ErrBadPolicy", n, err)
		}
	}
	if _, err := New(Spec{Kind: "x"}, 0, 1); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("New with a bad spec: %v", err)
	}
}
