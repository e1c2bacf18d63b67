package shard

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/snapshot"
)

// newSyncShard declares table emb (dim 2, SGD lr 1, zeros) and shard i of
// n's range of dense vector d (2 values, SGD lr 1, zeros).
func newSyncShard(t *testing.T, i, n int) *Shard {
	t.Helper()
	s := New(Options{ID: "t", Stripes: 2})
	t.Cleanup(func() { s.Close() })
	sgd := ams.OptimizerSpec{Name: "sgd", LR: 1}
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: sgd, Init: ams.InitSpec{Kind: "zeros"}}
	lo, hi := ams.DenseRange(2, i, n)
	dense := DenseDecl{Spec: ams.DenseSpec{Name: "d", Size: 2, Optimizer: sgd}, Lo: lo, Hi: hi, Init: make([]float32, hi-lo)}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, []DenseDecl{dense}); err != nil {
		t.Fatal(err)
	}
	return s
}

func rowsOf(t *testing.T, s *Shard, ids ...uint64) []float32 {
	t.Helper()
	out := make([]float32, 2*len(ids))
	if err := s.Pull(s.Version(), []ams.TableRequest{{Table: "emb", IDs: ids, Rows: out}}, false); err != nil {
		t.Fatal(err)
	}
	return out
}

func denseOf(t *testing.T, s *Shard) []float32 {
	t.Helper()
	_, _, v, err := s.PullDense(s.Version(), "d")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func roundPart(e, i uint32, w, n int, ids []uint64, grads []float32, dense []float32) RoundPart {
	p := RoundPart{Round: Round{e, i}, Worker: w, Workers: n}
	if ids != nil {
		p.Tables = []ams.TableRequest{{Table: "emb", IDs: ids, Rows: grads}}
	}
	if dense != nil {
		p.Dense = []DenseGrad{{Name: "d", Grad: dense}}
	}
	return p
}

func pending(t *testing.T, s *Shard, r Round) bool {
	t.Helper()
	p, err := s.WaitRound(context.Background(), s.Version(), r, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSyncRounds: a round is applied only when every worker's part is in,
// with the average of the parts; rounds apply in order; workers that leave
// an epoch stop counting; the epoch moves on when all have left; the
// parts' state entries enter the model with their round.
func TestSyncRounds(t *testing.T) {
	s := newSyncShard(t, 0, 1)
	v := s.Version()
	checkRoundWaitsForAllParts(t, s, v)
	checkRoundPartsRefused(t, s, v)
	checkLeavingEndsEpoch(t, s, v)
}

// TestSyncRoundWindow: a shard takes parts of the MaxRoundsAhead rounds
// from its next one in its epoch and of the first MaxRoundsAhead of the
// next epoch, refuses the others with ams.ErrRoundAhead (keeping
// nothing of them), takes one part per worker and round, and moves the
// window on as rounds are applied.
func TestSyncRoundWindow(t *testing.T) {
	s := newSyncShard(t, 0, 1)
	v := s.Version()
	part := func(e, i uint32, w int) RoundPart { return roundPart(e, i, w, 2, []uint64{1}, []float32{1, 1}, nil) }
	for _, tc := range []struct {
		e, i uint32
		want error
	}{
		{0, 0, nil},
		{0, MaxRoundsAhead - 1, nil},
		{0, MaxRoundsAhead, ams.ErrRoundAhead},
		{0, 1 << 31, ams.ErrRoundAhead},
		{1, 0, nil},
		{1, MaxRoundsAhead - 1, nil},
		{1, MaxRoundsAhead, ams.ErrRoundAhead},
		{2, 0, ams.ErrRoundAhead},
		{1 << 31, 0, ams.ErrRoundAhead},
		{0, 0, ams.ErrRoundApplied}, // worker 1's second part of (0,0)
	} {
		err := s.PushRound(v, part(tc.e, tc.i, 1))
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Fatalf("worker 1's part of %s = %v, want %v", Round{tc.e, tc.i}, err, tc.want)
		}
	}
	s.syncMu.Lock()
	kept := len(s.sync.acc)
	s.syncMu.Unlock()
	if kept != 4 {
		t.Fatalf("the shard keeps %d rounds, want the 4 whose parts it took", kept)
	}
	// Worker 0's part applies (0,0): the window moves on by one round.
	if err := s.PushRound(v, part(0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.PushRound(v, part(0, MaxRoundsAhead, 1)); err != nil {
		t.Fatalf("a part of the round that entered the window: %v", err)
	}
	if err := s.PushRound(v, part(0, MaxRoundsAhead+1, 1)); !errors.Is(err, ams.ErrRoundAhead) {
		t.Fatalf("a part past the moved window = %v, want ams.ErrRoundAhead", err)
	}
}

// checkRoundWaitsForAllParts pushes the two workers' parts of round (0,0),
// with worker 0's part of (0,1) between them: (0,0) is applied with their
// average once both are in, (0,1) waits, its state entry too.
func checkRoundWaitsForAllParts(t *testing.T, s *Shard, v uint64) {
	// Round (0,0): worker 0 touches id 1, worker 1 ids 1 and 2.
	if err := s.PushRound(v, roundPart(0, 0, 0, 2, []uint64{1}, []float32{2, 2}, []float32{1, 0})); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s, 1); !slices.Equal(got, []float32{0, 0}) {
		t.Fatalf("a round was applied with one of two parts: %v", got)
	}
	if !pending(t, s, Round{0, 1}) {
		t.Fatal("round (0,1) may start before (0,0) is complete")
	}
	if pending(t, s, Round{0, 0}) {
		t.Fatal("round (0,0) waits for itself")
	}
	// Worker 0 runs ahead into round (0,1): kept apart from (0,0).
	p := roundPart(0, 1, 0, 2, []uint64{2}, []float32{10, 10}, nil)
	p.State = []StateEntry{{Key: "reader/w0/checkpoint", Value: []byte(`{"iter":2}`)}}
	if err := s.PushRound(v, p); err != nil {
		t.Fatal(err)
	}
	if err := s.PushRound(v, roundPart(0, 0, 1, 2, []uint64{1, 2}, []float32{4, 4, 2, 0}, []float32{3, 2})); err != nil {
		t.Fatal(err)
	}
	// (0,0) applied: id 1 = -(2+4)/2, id 2 = -(0+2)/2, dense = -(1+3)/2, -(0+2)/2.
	if got := rowsOf(t, s, 1, 2); !slices.Equal(got, []float32{-3, -3, -1, 0}) {
		t.Fatalf("rows after round (0,0) = %v, want [-3 -3 -1 0]", got)
	}
	if got := denseOf(t, s); !slices.Equal(got, []float32{-2, -1}) {
		t.Fatalf("dense after round (0,0) = %v, want [-2 -1]", got)
	}
	if pending(t, s, Round{0, 1}) {
		t.Fatal("round (0,1) still waits after (0,0) was applied")
	}
	// The state of round (0,1) is not in before the round is applied.
	if st, _ := s.GetState(v, "reader/"); len(st) != 0 {
		t.Fatalf("state of an unapplied round is visible: %v", st)
	}
}

// checkRoundPartsRefused checks the parts PushRound refuses, after
// checkRoundWaitsForAllParts.
func checkRoundPartsRefused(t *testing.T, s *Shard, v uint64) {
	// A part of an applied round, a second part, another worker
	// count, a bad worker index, a done part with gradients.
	for _, tc := range []struct {
		p    RoundPart
		want error
	}{
		{roundPart(0, 0, 1, 2, nil, nil, nil), ams.ErrRoundApplied},
		{roundPart(0, 1, 0, 2, nil, nil, nil), ams.ErrRoundApplied},
		{roundPart(0, 1, 1, 3, nil, nil, nil), ams.ErrBadRequest},
		{roundPart(0, 1, 2, 2, nil, nil, nil), ams.ErrBadRequest},
		{RoundPart{Round: Round{0, 1}, Worker: 1, Workers: 2, Done: true, Dense: []DenseGrad{{Name: "d", Grad: []float32{1, 1}}}}, ams.ErrBadRequest},
		{roundPart(0, 1, 1, 2, []uint64{1}, []float32{1}, nil), ams.ErrBadRequest},
		{roundPart(0, 1, 1, 2, nil, nil, []float32{1}), ams.ErrBadRequest},
	} {
		if err := s.PushRound(v, tc.p); !errors.Is(err, tc.want) {
			t.Errorf("part %+v = %v, want %v", tc.p, err, tc.want)
		}
	}
	if err := s.PushRound(v+1, roundPart(0, 1, 1, 2, nil, nil, nil)); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("part of another version = %v, want ams.ErrStaleVersion", err)
	}
}

// checkLeavingEndsEpoch lets worker 1 and then worker 0 leave epoch 0,
// after checkRoundWaitsForAllParts: round (0,1) is applied with worker 0's
// part alone, then epoch 1 starts, and the progress is in the state.
func checkLeavingEndsEpoch(t *testing.T, s *Shard, v uint64) {
	// Worker 1 has no batch for (0,1): it leaves the epoch; (0,1) is
	// applied with worker 0's part alone (the average of one part).
	if err := s.PushRound(v, RoundPart{Round: Round{0, 1}, Worker: 1, Workers: 2, Done: true}); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, s, 2); !slices.Equal(got, []float32{-11, -10}) {
		t.Fatalf("id 2 after round (0,1) = %v, want [-11 -10]", got)
	}
	if st, _ := s.GetState(v, "reader/"); len(st) != 1 || string(st[0].Value) != `{"iter":2}` {
		t.Fatalf("state after round (0,1) = %v", st)
	}
	// Worker 0 leaves at (0,2): every worker has left epoch 0, so epoch 1
	// starts, and nobody's part from epoch 0 is taken any more.
	if !pending(t, s, Round{1, 0}) {
		t.Fatal("epoch 1 started while worker 0 was still in epoch 0")
	}
	if err := s.PushRound(v, RoundPart{Round: Round{0, 2}, Worker: 0, Workers: 2, Done: true}); err != nil {
		t.Fatal(err)
	}
	if pending(t, s, Round{1, 0}) {
		t.Fatal("epoch 1 did not start after every worker left epoch 0")
	}
	if err := s.PushRound(v, roundPart(0, 3, 0, 2, nil, nil, nil)); !errors.Is(err, ams.ErrRoundApplied) {
		t.Fatalf("part of a finished epoch = %v, want ams.ErrRoundApplied", err)
	}
	var rec syncRecord
	st, _ := s.GetState(v, SyncStateKey)
	if len(st) != 1 || json.Unmarshal(st[0].Value, &rec) != nil || rec.Next != (Round{1, 0}) || rec.Workers != 2 || len(rec.Left) != 0 {
		t.Fatalf("sync progress in the state = %v", st)
	}
}

// TestSyncRoundsRestore: the progress is in snapshots and every shard a
// snapshot is restored onto takes it; unfinished rounds are not (their
// workers push them again after the restore).
func TestSyncRoundsRestore(t *testing.T) {
	store, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srcs := []*Shard{newSyncShard(t, 0, 2), newSyncShard(t, 1, 2)}
	m := &snapshot.Manifest{Seq: 1, Version: 1, Shards: 2}
	for i, s := range srcs {
		for w := range 2 {
			if err := s.PushRound(1, roundPart(0, 0, w, 2, []uint64{uint64(i)}, []float32{1, 1}, nil)); err != nil {
				t.Fatal(err)
			}
		}
		// Worker 0's part of (0,1) is in, worker 1's not: unfinished.
		if err := s.PushRound(1, roundPart(0, 1, 0, 2, []uint64{uint64(i)}, []float32{5, 5}, nil)); err != nil {
			t.Fatal(err)
		}
		p, err := s.WriteSnapshot(store, 1, i)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add(p); err != nil { // the equal progress of both shards merges
			t.Fatal(err)
		}
	}
	if err := snapshot.Commit(store, m); err != nil {
		t.Fatal(err)
	}
	dsts := []*Shard{New(Options{ID: "a", Stripes: 2}), New(Options{ID: "b", Stripes: 2}), New(Options{ID: "c", Stripes: 2})}
	for i, s := range dsts {
		defer s.Close()
		own := Ownership{Index: i, Shards: 3, Row: func(string, uint64) bool { return true }, State: func(string) bool { return i == 0 }}
		m.Version = 2
		if err := s.Restore(store, m, own); err != nil {
			t.Fatal(err)
		}
		if !pending(t, s, Round{0, 2}) || pending(t, s, Round{0, 1}) {
			t.Fatalf("shard %d after the restore is not at round (0,1)", i)
		}
		// Worker 0 pushes (0,1) again; worker 1 pushes it: applied, the
		// unfinished part from before the restore is gone.
		for w := range 2 {
			if err := s.PushRound(s.Version(), roundPart(0, 1, w, 2, []uint64{7}, []float32{2, 2}, nil)); err != nil {
				t.Fatalf("shard %d: %v", i, err)
			}
		}
		if got := rowsOf(t, s, 7); !slices.Equal(got, []float32{-2, -2}) {
			t.Fatalf("shard %d: id 7 after round (0,1) = %v, want [-2 -2]", i, got)
		}
	}
}

// TestWithinLimits splits requests into parts of at most maxIDs ids and
// maxValues values: concatenated, the parts are the requests, in order,
// each id with its row.
func TestWithinLimits(t *testing.T) {
	reqs := []ams.TableRequest{
		{Table: "a", IDs: []uint64{1, 2, 3, 4, 5}, Rows: []float32{1, 2, 3, 4, 5}},
		{Table: "b", IDs: []uint64{6, 7, 8}, Rows: []float32{6, 6, 6, 7, 7, 7, 8, 8, 8}},
		{Table: "c", IDs: nil, Rows: nil},
	}
	dims := []int{1, 3, 2}
	for _, lim := range []struct{ ids, values int }{{1, 3}, {2, 4}, {3, 100}, {100, 3}, {100, 100}} {
		parts := withinLimits(reqs, dims, lim.ids, lim.values)
		got := map[string][]uint64{}
		gotRows := map[string][]float32{}
		for _, part := range parts {
			ids, values := 0, 0
			for _, r := range part {
				d := dims[slices.IndexFunc(reqs, func(q ams.TableRequest) bool { return q.Table == r.Table })]
				if len(r.IDs) == 0 || len(r.Rows) != len(r.IDs)*d {
					t.Fatalf("limits %+v: a request of %d ids and %d values in %v", lim, len(r.IDs), len(r.Rows), parts)
				}
				ids, values = ids+len(r.IDs), values+len(r.Rows)
				got[r.Table] = append(got[r.Table], r.IDs...)
				gotRows[r.Table] = append(gotRows[r.Table], r.Rows...)
			}
			if ids > lim.ids || values > lim.values || ids == 0 {
				t.Fatalf("limits %+v: a part of %d ids and %d values", lim, ids, values)
			}
		}
		for _, r := range reqs {
			if !slices.Equal(got[r.Table], r.IDs) || !slices.Equal(gotRows[r.Table], r.Rows) {
				t.Fatalf("limits %+v: table %s split into ids %v rows %v, want %v %v", lim, r.Table, got[r.Table], gotRows[r.Table], r.IDs, r.Rows)
			}
		}
	}
}

// TestSyncRoundLargerThanARequest: a round holds every worker's ids; two
// parts within the request limits whose union is not (more than
// ams.MaxRequestValues values) still apply, pushed in several requests.
func TestSyncRoundLargerThanARequest(t *testing.T) {
	const dim = 4096
	n := ams.MaxRequestValues/dim/2 + 1 // ids per worker
	s := New(Options{ID: "t", Stripes: 2})
	t.Cleanup(func() { s.Close() })
	spec := ams.TableSpec{Name: "wide", Dim: dim, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	grads := make([]float32, n*dim)
	for i := range grads {
		grads[i] = 2
	}
	for w := range 2 {
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = uint64(w*n + i)
		}
		p := RoundPart{Round: Round{0, 0}, Worker: w, Workers: 2, Tables: []ams.TableRequest{{Table: "wide", IDs: ids, Rows: grads}}}
		if err := s.PushRound(1, p); err != nil {
			t.Fatalf("worker %d's part: %v", w, err)
		}
	}
	if p := pending(t, s, Round{0, 1}); p {
		t.Fatal("round (0,0) was not applied")
	}
	out := make([]float32, 2*dim)
	if err := s.Pull(1, []ams.TableRequest{{Table: "wide", IDs: []uint64{0, uint64(2*n - 1)}, Rows: out}}, false); err != nil {
		t.Fatal(err)
	}
	// Each id is in one part of two: its gradient 2, averaged over the
	// two parts, is 1.
	if out[0] != -1 || out[2*dim-1] != -1 {
		t.Fatalf("rows after the round: %v ... %v, want -1", out[0], out[2*dim-1])
	}
}
