package ams

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func newTestTable(t testing.TB, spec TableSpec) *Table {
	t.Helper()
	tb, err := NewTable(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// refRow and refTable are the dumb reference: a map of rows, updated one
// row at a time with the same optimizer.
type refRow struct {
	values, state []float32
	touched, hits uint32
}

type refTable struct {
	spec TableSpec
	opt  Optimizer
	rows map[uint64]*refRow
}

func newRefTable(spec TableSpec) *refTable {
	spec.EnsureDefaults()
	opt, err := spec.Optimizer.New()
	if err != nil {
		panic(err)
	}
	return &refTable{spec: spec, opt: opt, rows: map[uint64]*refRow{}}
}

func (r *refTable) row(id uint64, now uint32) *refRow {
	if x, ok := r.rows[id]; ok {
		x.touched = now
		x.hits++
		return x
	}
	x := &refRow{values: make([]float32, r.spec.Dim), state: make([]float32, r.opt.StateWidth(r.spec.Dim)), touched: now, hits: 1}
	r.spec.Init.Fill(id, x.values)
	r.opt.InitState(x.state)
	r.rows[id] = x
	return x
}

func (r *refTable) pull(id uint64, create bool, now uint32) []float32 {
	if x, ok := r.rows[id]; ok {
		return x.values // reading an existing row leaves its statistics alone
	}
	if !create { // the initial value, not created
		v := make([]float32, r.spec.Dim)
		r.spec.Init.Fill(id, v)
		return v
	}
	return r.row(id, now).values
}

func (r *refTable) push(id uint64, g []float32, now uint32) {
	x := r.row(id, now)
	r.opt.Apply(x.values, x.state, g)
}

func checkAgainstRef(t *testing.T, tb *Table, ref *refTable) {
	t.Helper()
	if tb.Len() != len(ref.rows) {
		t.Fatalf("Len = %d, want %d", tb.Len(), len(ref.rows))
	}
	n := 0
	tb.Range(func(id uint64, values, state []float32, touched, hits uint32) bool {
		n++
		x, ok := ref.rows[id]
		if !ok {
			t.Fatalf("Range: unexpected id %d", id)
		}
		if !slices.Equal(values, x.values) || !slices.Equal(state, x.state) || touched != x.touched || hits != x.hits {
			t.Fatalf("Range: id %d = %v %v %d %d, want %v %v %d %d", id, values, state, touched, hits,
				x.values, x.state, x.touched, x.hits)
		}
		return true
	})
	if n != len(ref.rows) {
		t.Fatalf("Range visited %d rows, want %d", n, len(ref.rows))
	}
}

// TestTableAgainstReference drives a Table and the map reference with the
// same random pulls, pushes (with duplicate ids) and deletes.
// Dims 8 and 16 give rows of whole cache lines (values and state) for
// some of the optimizers.
func TestTableAgainstReference(t *testing.T) {
	for _, dim := range []int{5, 8, 16} {
		for _, opt := range []string{OptSGD, OptAdagrad, OptAdam, OptFTRL, OptMomentum} {
			spec := TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: opt, L1: 0.01},
				Init: InitSpec{Kind: InitUniform, Scale: 0.1, Seed: 9}}
			t.Run(fmt.Sprintf("dim=%d/%s", dim, opt), func(t *testing.T) { againstReference(t, spec) })
		}
	}
}

// againstReference drives a table of spec and the map reference with the
// same random pulls, pushes and deletes.
func againstReference(t *testing.T, spec TableSpec) {
	tb := newTestTable(t, spec)
	ref := newRefTable(spec)
	rng := rand.New(rand.NewPCG(3, 4))
	d := spec.Dim
	for step := uint32(1); step <= 300; step++ {
		batch := 1 + rng.IntN(40)
		ids := make([]uint64, batch)
		for k := range ids {
			ids[k] = rng.Uint64N(300) // repeats within and across batches
		}
		switch rng.IntN(5) {
		case 0, 1: // pull, creating or not
			create := rng.IntN(2) == 0
			out := make([]float32, batch*d)
			created := tb.Pull(ids, out, create, step)
			wantCreated := 0
			for k, id := range ids {
				if _, ok := ref.rows[id]; !ok && create {
					wantCreated++
				}
				if want := ref.pull(id, create, step); !slices.Equal(out[k*d:(k+1)*d], want) {
					t.Fatalf("step %d: pull(%d) = %v, want %v", step, id, out[k*d:(k+1)*d], want)
				}
			}
			if created != wantCreated {
				t.Fatalf("step %d: pull created %d, want %d", step, created, wantCreated)
			}
		case 2, 3: // push
			g := make([]float32, batch*d)
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			wantCreated := 0
			for k, id := range ids {
				if _, ok := ref.rows[id]; !ok {
					wantCreated++
				}
				ref.push(id, g[k*d:(k+1)*d], step)
			}
			if created := tb.Push(ids, g, step); created != wantCreated {
				t.Fatalf("step %d: push created %d, want %d", step, created, wantCreated)
			}
		case 4: // delete
			for _, id := range ids[:batch/4+1] {
				_, want := ref.rows[id]
				if got := tb.Delete(id); got != want {
					t.Fatalf("step %d: Delete(%d) = %v, want %v", step, id, got, want)
				}
				delete(ref.rows, id)
			}
		}
		if step%50 == 0 {
			checkAgainstRef(t, tb, ref)
		}
	}
	checkAgainstRef(t, tb, ref)
	if int(tb.next) != tb.Len()+len(tb.free) {
		t.Fatalf("slots: %d handed out, %d live, %d free", tb.next, tb.Len(), len(tb.free))
	}
}

func TestTablePullCreateAndStats(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 3, Init: InitSpec{Kind: InitConstant, Value: 0.5}})
	out := make([]float32, 6)
	half := []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}
	if n := tb.Pull([]uint64{0, 7}, out, false, 10); n != 0 || tb.Len() != 0 || !slices.Equal(out, half) {
		t.Fatalf("pull without create: created %d, len %d, out %v (want the initial values, nothing created)", n, tb.Len(), out)
	}
	if n := tb.Pull([]uint64{0, 7}, out, true, 11); n != 2 || tb.Len() != 2 {
		t.Fatalf("pull with create: created %d, len %d", n, tb.Len())
	}
	if !slices.Equal(out, []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}) {
		t.Fatalf("created rows = %v", out)
	}
	if lt, hits, ok := tb.Stats(0); !ok || lt != 11 || hits != 1 {
		t.Fatalf("Stats(0) = %d %d %v after creation", lt, hits, ok)
	}
	tb.Pull([]uint64{0, 0}, out, true, 12)   // pulling existing rows reads them only
	tb.Pull([]uint64{0}, out[:3], false, 99) // a read-only pull touches nothing
	if lt, hits, _ := tb.Stats(0); lt != 11 || hits != 1 {
		t.Fatalf("Stats(0) = %d %d after two more pulls, want 11 1", lt, hits)
	}
	tb.Push([]uint64{7}, []float32{1, 1, 1}, 13)
	if lt, hits, _ := tb.Stats(7); lt != 13 || hits != 2 {
		t.Fatalf("Stats(7) = %d %d after push", lt, hits)
	}
	if _, _, ok := tb.Stats(8); ok {
		t.Fatal("Stats of a missing id")
	}
	// Hits saturate.
	if err := tb.Load(8, []float32{1, 2, 3}, nil, 5, math.MaxUint32-1); err != nil {
		t.Fatal(err)
	}
	tb.Push([]uint64{8, 8, 8}, make([]float32, 9), 20)
	if lt, hits, _ := tb.Stats(8); lt != 20 || hits != math.MaxUint32 {
		t.Fatalf("Stats(8) = %d %d, want saturated hits", lt, hits)
	}
}

func TestTablePushCreatesThenAppliesInOrder(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 2, Optimizer: OptimizerSpec{Name: OptSGD, LR: 0.5},
		Init: InitSpec{Kind: InitConstant, Value: 1}})
	// Duplicate id 3: applied twice in order; new ids start at the init value.
	n := tb.Push([]uint64{3, 4, 3}, []float32{1, 2, 3, 4, 10, 20}, 1)
	if n != 2 {
		t.Fatalf("created %d, want 2", n)
	}
	if v, _ := tb.Get(3); !slices.Equal(v, []float32{1 - 0.5 - 5, 1 - 1 - 10}) {
		t.Fatalf("row 3 = %v", v)
	}
	if v, _ := tb.Get(4); !slices.Equal(v, []float32{1 - 1.5, 1 - 2}) {
		t.Fatalf("row 4 = %v", v)
	}
	if _, ok := tb.Get(5); ok {
		t.Fatal("Get of a missing id")
	}
}

// TestTableLazyAdamPerRowSteps pushes rows different numbers of times and
// checks each row's step count and values against a lone Adam row.
func TestTableLazyAdamPerRowSteps(t *testing.T) {
	spec := TableSpec{Name: "t", Dim: 4, Optimizer: OptimizerSpec{Name: OptAdam, LR: 0.1}, Init: InitSpec{Kind: InitUniform, Seed: 1}}
	tb := newTestTable(t, spec)
	g := []float32{0.5, -1, 2, 0}
	pushes := map[uint64]int{10: 1, 20: 3, 30: 7}
	for round := range 7 {
		for id, k := range pushes {
			if round < k {
				tb.Push([]uint64{id}, g, uint32(round))
			}
		}
	}
	opt, _ := tb.Spec().Optimizer.New()
	for id, k := range pushes {
		w := make([]float32, 4)
		tb.Spec().Init.Fill(id, w)
		st := make([]float32, opt.StateWidth(4))
		for range k {
			opt.Apply(w, st, g)
		}
		got, _ := tb.Get(id)
		if !slices.Equal(got, w) {
			t.Fatalf("id %d after %d pushes = %v, want %v", id, k, got, w)
		}
		var steps float32
		tb.Range(func(rid uint64, _, state []float32, _, _ uint32) bool {
			if rid == id {
				steps = state[8]
			}
			return true
		})
		if steps != float32(k) {
			t.Fatalf("id %d: step count %v, want %d", id, steps, k)
		}
	}
}

func TestTableDeleteReusesSlots(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4, Optimizer: OptimizerSpec{Name: OptAdagrad}})
	ids := make([]uint64, 1000)
	for i := range ids {
		ids[i] = uint64(i) * 31
	}
	tb.Push(ids, make([]float32, 4000), 1)
	tb.Push(ids, ones(4000), 2) // accumulators move off their initial value
	slotsBefore, memBefore := tb.next, tb.MemoryBytes()
	for _, id := range ids[:300] {
		if !tb.Delete(id) {
			t.Fatalf("Delete(%d) = false", id)
		}
	}
	if tb.Delete(ids[0]) {
		t.Fatal("second Delete returned true")
	}
	if tb.Len() != 700 || len(tb.free) != 300 {
		t.Fatalf("len %d free %d", tb.Len(), len(tb.free))
	}
	// 300 new ids take the freed slots: no slot beyond the high-water mark,
	// no slab growth; each reused slot starts fresh.
	fresh := make([]uint64, 300)
	for i := range fresh {
		fresh[i] = 1<<50 + uint64(i)
	}
	out := make([]float32, 1200)
	if n := tb.Pull(fresh, out, true, 3); n != 300 {
		t.Fatalf("created %d", n)
	}
	if tb.next != slotsBefore || len(tb.free) != 0 || tb.MemoryBytes() > memBefore+int64(cap(tb.free))*4 {
		t.Fatalf("slab grew: %d slots (was %d), free %d", tb.next, slotsBefore, len(tb.free))
	}
	spec := tb.Spec()
	for k, id := range fresh {
		want := make([]float32, 4)
		spec.Init.Fill(id, want)
		if !slices.Equal(out[4*k:4*k+4], want) {
			t.Fatalf("reused row of %d = %v, want its init %v", id, out[4*k:4*k+4], want)
		}
		if lt, hits, _ := tb.Stats(id); lt != 3 || hits != 1 {
			t.Fatalf("reused row stats %d %d", lt, hits)
		}
	}
	tb.Range(func(id uint64, _, state []float32, _, _ uint32) bool {
		if id >= 1<<50 && !slices.Equal(state, []float32{0.1, 0.1, 0.1, 0.1}) {
			t.Fatalf("reused row of %d kept state %v", id, state)
		}
		return true
	})
	// The next creation grows again.
	tb.Pull([]uint64{1 << 60}, out[:4], true, 4)
	if tb.next != slotsBefore+1 {
		t.Fatalf("next slot %d, want %d", tb.next, slotsBefore+1)
	}
	for _, id := range ids[:300] {
		if _, ok := tb.Get(id); ok {
			t.Fatalf("deleted id %d still present", id)
		}
	}
}

func ones(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func TestTableRangeStopsEarly(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 1})
	tb.Pull([]uint64{1, 2, 3, 4}, make([]float32, 4), true, 0)
	n := 0
	tb.Range(func(uint64, []float32, []float32, uint32, uint32) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("Range called fn %d times after it returned false", n)
	}
}

// TestTablePullAtPushAt splits one request over two tables as two stripes
// would, filling one shared response buffer.
func TestTablePullAtPushAt(t *testing.T) {
	spec := TableSpec{Name: "t", Dim: 3, Optimizer: OptimizerSpec{Name: OptSGD, LR: 1},
		Init: InitSpec{Kind: InitNormal, Seed: 5}}
	stripes := []*Table{newTestTable(t, spec), newTestTable(t, spec)}
	whole := newTestTable(t, spec) // one table holding everything, for reference
	ids := []uint64{11, 4, 0, 9, 4, 100, 3}
	const d = 3
	split := func() (sid [2][]uint64, spos [2][]int32) {
		for k, id := range ids {
			s := Mix64(id) & 1
			sid[s] = append(sid[s], id)
			spos[s] = append(spos[s], int32(k))
		}
		return
	}
	sid, spos := split()
	out := make([]float32, len(ids)*d)
	for i := range out {
		out[i] = -7
	}
	created := 0
	for s, tb := range stripes {
		created += tb.PullAt(sid[s], spos[s], out, true, 1)
	}
	want := make([]float32, len(ids)*d)
	if n := whole.Pull(ids, want, true, 1); n != created || n != 6 {
		t.Fatalf("created %d by stripes, %d by one table, want 6", created, n)
	}
	if !slices.Equal(out, want) {
		t.Fatalf("PullAt buffer %v, want %v", out, want)
	}
	grads := make([]float32, len(ids)*d)
	for i := range grads {
		grads[i] = float32(i)
	}
	for s, tb := range stripes {
		tb.PushAt(sid[s], spos[s], grads, 2)
	}
	whole.Push(ids, grads, 2)
	for _, id := range ids {
		w, _ := whole.Get(id)
		got, _ := stripes[Mix64(id)&1].Get(id)
		if !slices.Equal(got, w) {
			t.Fatalf("id %d after PushAt = %v, want %v", id, got, w)
		}
	}
}

func TestTableBatchContracts(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 4})
	if err := tb.CheckBatch(3, 12); err != nil {
		t.Fatal(err)
	}
	if err := tb.CheckBatch(3, 11); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("CheckBatch(3, 11) = %v", err)
	}
	for name, f := range map[string]func(){
		"Pull":         func() { tb.Pull([]uint64{1}, make([]float32, 3), true, 0) },
		"Push":         func() { tb.Push([]uint64{1}, make([]float32, 5), 0) },
		"PullAt-pos":   func() { tb.PullAt([]uint64{1}, nil, make([]float32, 4), true, 0) },
		"PullAt-range": func() { tb.PullAt([]uint64{1}, []int32{1}, make([]float32, 4), true, 0) },
		"PushAt-pos":   func() { tb.PushAt([]uint64{1, 2}, []int32{0}, make([]float32, 8), 0) },
		"PushAt-range": func() { tb.PushAt([]uint64{1}, []int32{-1}, make([]float32, 8), 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with bad lengths did not panic", name)
				}
			}()
			f()
		}()
	}
	if err := tb.Load(1, make([]float32, 3), nil, 0, 0); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("Load with 3 values: %v", err)
	}
	if err := tb.Load(1, make([]float32, 4), make([]float32, 5), 0, 0); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("Load with 5 state words: %v", err)
	}
}

func TestTableLoadRoundTrip(t *testing.T) {
	spec := TableSpec{Name: "t", Dim: 2, Optimizer: OptimizerSpec{Name: OptFTRL}}
	a := newTestTable(t, spec)
	a.Push([]uint64{1, 2, 3}, []float32{1, 2, 3, 4, 5, 6}, 7)
	a.Pull([]uint64{2}, make([]float32, 2), true, 8)
	b := newTestTable(t, spec)
	b.Pull([]uint64{2}, make([]float32, 2), true, 1) // overwritten by Load
	a.Range(func(id uint64, v, s []float32, lt, hits uint32) bool {
		if err := b.Load(id, v, s, lt, hits); err != nil {
			t.Fatal(err)
		}
		return true
	})
	ref := &refTable{rows: map[uint64]*refRow{}}
	a.Range(func(id uint64, v, s []float32, lt, hits uint32) bool {
		ref.rows[id] = &refRow{values: slices.Clone(v), state: slices.Clone(s), touched: lt, hits: hits}
		return true
	})
	checkAgainstRef(t, b, ref)
}

func TestTableMemoryBytesSmall(t *testing.T) {
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 16})
	empty := tb.MemoryBytes()
	tb.Pull([]uint64{1}, make([]float32, 16), true, 0)
	one := tb.MemoryBytes()
	// One row: an 8-bucket index and a 64-row first chunk per slab.
	if want := int64(8*12 + 64*64 + 64*64 + 64*12 + 3*24); one-empty > want+64 {
		t.Fatalf("one row costs %d bytes, want about %d", one-empty, want)
	}
}

// TestTableGroupsMatchOneRowAtATime checks the grouped batch path against
// calls of one id each, with batches longer than a group, ids repeated
// within and across groups, new ids repeated in one group, and PullAt and
// PushAt positions in reverse order.
func TestTableGroupsMatchOneRowAtATime(t *testing.T) {
	spec := TableSpec{Name: "t", Dim: 3, Optimizer: OptimizerSpec{Name: OptAdagrad},
		Init: InitSpec{Kind: InitUniform, Seed: 2}}
	batched, single := newTestTable(t, spec), newTestTable(t, spec)
	rng := rand.New(rand.NewPCG(5, 6))
	const d, n = 3, 3*rowGroup + 5
	for step := uint32(1); step <= 20; step++ {
		ids := make([]uint64, n)
		pos := make([]int32, n)
		for k := range ids {
			ids[k] = rng.Uint64N(60) + uint64(step)*20 // some new, some old
			pos[k] = int32(n - 1 - k)
		}
		g := make([]float32, n*d)
		for i := range g {
			g[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, n*d)
		wantCreated := 0
		for k := range ids {
			o := int(pos[k]) * d
			if step%2 == 0 {
				wantCreated += single.Push(ids[k:k+1], g[o:o+d], step)
			} else {
				want := make([]float32, d)
				wantCreated += single.Pull(ids[k:k+1], want, step%3 == 0, step)
				copy(out[o:o+d], want)
			}
		}
		var created int
		if step%2 == 0 {
			created = batched.PushAt(ids, pos, g, step)
		} else {
			got := make([]float32, n*d)
			created = batched.PullAt(ids, pos, got, step%3 == 0, step)
			if !slices.Equal(got, out) {
				t.Fatalf("step %d: PullAt = %v, want %v", step, got, out)
			}
		}
		if created != wantCreated {
			t.Fatalf("step %d: created %d, want %d", step, created, wantCreated)
		}
		ref := &refTable{rows: map[uint64]*refRow{}}
		single.Range(func(id uint64, v, s []float32, lt, hits uint32) bool {
			ref.rows[id] = &refRow{values: slices.Clone(v), state: slices.Clone(s), touched: lt, hits: hits}
			return true
		})
		checkAgainstRef(t, batched, ref)
	}
}

// A row's snapshot encoding is its values, its state and its statistics
// (last touched, hits, step), little-endian; and it loads back unchanged,
// one row at a time and in bulk.
func TestSnapshotRowLayout(t *testing.T) {
	for _, c := range []struct {
		dim int
		opt string
	}{{16, OptSGD}, {8, OptAdagrad}, {18, OptAdagrad}, {5, OptAdam}, {3, OptFTRL}} {
		spec := TableSpec{Name: "t", Dim: c.dim, Optimizer: OptimizerSpec{Name: c.opt}, Init: InitSpec{Kind: InitUniform, Scale: 0.1, Seed: 4}}
		tb := newTestTable(t, spec)
		tb.SetStep(77)
		ids := []uint64{3, 1 << 40, 3, 99}
		g := make([]float32, len(ids)*c.dim)
		for i := range g {
			g[i] = float32(i%7) - 3
		}
		tb.Push(ids, g, 1234)
		for _, id := range ids {
			b, ok := tb.AppendSnapshotRow(nil, id)
			if !ok || len(b) != tb.SnapshotRowBytes() {
				t.Fatalf("dim %d %s: id %d encodes as %d bytes (%v)", c.dim, c.opt, id, len(b), ok)
			}
			word := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
			values, state, st := tb.split(tb.rows.row(mustSlot(t, tb, id)))
			for i, v := range append(slices.Clone(values), state...) {
				if word(i) != math.Float32bits(v) {
					t.Fatalf("dim %d %s: id %d word %d = %#x, want %#x", c.dim, c.opt, id, i, word(i), math.Float32bits(v))
				}
			}
			n := c.dim + tb.sw
			wantHits := uint32(1)
			if id == 3 {
				wantHits = 2
			}
			if got := [3]uint32{word(n), word(n + 1), word(n + 2)}; got != [3]uint32{1234, wantHits, 77} || *st != got {
				t.Fatalf("dim %d %s: id %d statistics encode as %v (row %v), want [1234 %d 77]", c.dim, c.opt, id, got, *st, wantHits)
			}
			one, bulk := newTestTable(t, spec), newTestTable(t, spec)
			if err := one.LoadSnapshotRow(id, b, make([]float32, c.dim), make([]float32, tb.sw)); err != nil {
				t.Fatal(err)
			}
			if err := bulk.LoadSnapshotRows([]uint64{id}, b); err != nil {
				t.Fatal(err)
			}
			for _, back := range []*Table{one, bulk} {
				if again, _ := back.AppendSnapshotRow(nil, id); !bytes.Equal(again, b) {
					t.Fatalf("dim %d %s: id %d does not load back unchanged", c.dim, c.opt, id)
				}
			}
		}
	}
}

func mustSlot(t *testing.T, tb *Table, id uint64) uint32 {
	t.Helper()
	s, ok := tb.idx.get(id)
	if !ok {
		t.Fatalf("id %d has no row", id)
	}
	return s
}
