package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/xdlgo/xps/ams"
)

// Synchronous training (sync mode). A round is the Iter-th batch of every
// worker in an epoch. Each worker pushes its part of a round (PushRound):
// the shard adds its gradients into the round's accumulator instead of
// applying them. When every one of the round's workers has pushed its part
// or has left the epoch, the shard applies the round: every row's and
// dense value's gradient is the sum of the parts divided by the number of
// parts with gradients (the average over the workers: a worker whose
// batch missed a row contributes zero to it), with the tables' optimizers,
// and then stores the state entries the parts carried (the workers'
// checkpoints, which thereby enter the model with exactly the gradients
// they account for). Rounds are applied in order; a worker asks for a
// round's rows with WaitRound first, which returns once every earlier
// round is applied: that is the barrier per iteration.
//
// The progress (next round, workers, who left the epoch) is kept as the
// state entry SyncStateKey, so that it is in every snapshot and a restore
// resumes it; every shard keeps its own copy (equal on all shards at a
// snapshot, when the workers are paused between their pushes), and
// Restore gives it to every shard. Accumulated parts of unfinished rounds
// are not kept: after a restore the workers push them again from their
// checkpoints.

// SyncStateKey is the state entry of a shard's sync-mode progress.
const SyncStateKey = ams.StateSyncRounds

// maxSyncWorkers bounds the workers of a sync round.
const maxSyncWorkers = 1 << 12

// MaxRoundsAhead bounds the rounds a shard keeps parts of: it takes a part
// of round r only when r is one of the MaxRoundsAhead rounds from the
// next round it applies (rec.Next) in Next's epoch, or one of the first
// MaxRoundsAhead rounds of the epoch after; a part beyond them is
// refused with ams.ErrRoundAhead and kept nowhere. So a shard keeps at
// most 2 x MaxRoundsAhead rounds' accumulators, each with at most one
// part per worker, however far ahead a client pushes.
//
// A worker in step pushes its part of round r after its pull of r, which
// waits at every shard until the rounds before r are applied there
// (client.PullRound asks every shard), so its part is of the shard's
// next round; the done part it pushes when its data ends, without a
// pull, is at most one round ahead (a shard may still lack other
// workers' parts of the round before); its first part of the next epoch
// comes after its pull of it, which waits for the epoch's end. 16 leaves
// room to spare.
const MaxRoundsAhead = 16

// Round names a round of sync mode.
type Round struct {
	Epoch uint32 `json:"epoch"`
	Iter  uint32 `json:"iter"`
}

// Compare orders rounds by epoch, then iteration.
func (r Round) Compare(o Round) int {
	if r.Epoch != o.Epoch {
		return cmpU32(r.Epoch, o.Epoch)
	}
	return cmpU32(r.Iter, o.Iter)
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (r Round) String() string { return fmt.Sprintf("epoch %d round %d", r.Epoch, r.Iter) }

// DenseGrad is the gradient of the shard's range of a dense vector.
type DenseGrad struct {
	Name string
	Grad []float32
}

// RoundPart is one worker's part of a round.
type RoundPart struct {
	Round           Round
	Worker, Workers int
	// Done: the worker has no batch for this round and leaves the epoch;
	// a done part carries no gradients.
	Done   bool
	Tables []ams.TableRequest // gradients in Rows
	Dense  []DenseGrad
	State  []StateEntry
}

// syncRecord is the progress kept in SyncStateKey.
type syncRecord struct {
	Workers int   `json:"workers"`
	Next    Round `json:"next"`
	// Left are the workers that have left Next's epoch, sorted.
	Left []int `json:"left,omitempty"`
}

// window reports whether r is in the window of rounds the shard takes
// parts of (MaxRoundsAhead), given that r is not before rec.Next.
func (rec *syncRecord) window(r Round) bool {
	switch uint64(r.Epoch) {
	case uint64(rec.Next.Epoch):
		return uint64(r.Iter) < uint64(rec.Next.Iter)+MaxRoundsAhead
	case uint64(rec.Next.Epoch) + 1:
		return r.Iter < MaxRoundsAhead
	}
	return false
}

func (rec *syncRecord) left(w int) bool {
	_, ok := slices.BinarySearch(rec.Left, w)
	return ok
}

// roundAcc accumulates the parts of one round.
type roundAcc struct {
	from   []bool // by worker: its part is in
	done   []int  // workers whose part is done
	parts  int    // parts with gradients
	tables map[string]*tableAcc
	order  []string // tables in order of first use
	dense  map[string][]float32
	dorder []string
	state  []StateEntry
}

// tableAcc sums one table's gradients by id.
type tableAcc struct {
	dim   int
	index map[uint64]int
	ids   []uint64
	sum   []float32
}

// syncRounds is the sync-mode state of a shard, guarded by Shard.syncMu.
type syncRounds struct {
	version  uint64 // the cluster version it belongs to
	rec      syncRecord
	acc      map[Round]*roundAcc
	advanced chan struct{} // closed (and replaced) when rec.Next moves
}

// syncFor returns the sync state of version, starting it from the stored
// record when the version changed (after a restore). syncMu is held.
func (s *Shard) syncFor(version uint64) (*syncRounds, error) {
	if sr := s.sync; sr != nil && sr.version == version {
		return sr, nil
	}
	sr := &syncRounds{version: version, acc: map[Round]*roundAcc{}, advanced: make(chan struct{})}
	s.stateMu.Lock()
	b, ok := s.state[SyncStateKey]
	s.stateMu.Unlock()
	if ok {
		if err := json.Unmarshal(b, &sr.rec); err != nil {
			return nil, fmt.Errorf("ams: bad sync state %q: %w", b, err)
		}
	}
	if old := s.sync; old != nil {
		close(old.advanced) // wake waiters: they find the version changed
	}
	s.sync = sr
	return sr, nil
}

// checkPart validates p against the catalog before anything is kept.
func (s *Shard) checkPart(p *RoundPart) error {
	if p.Workers < 1 || p.Workers > maxSyncWorkers || p.Worker < 0 || p.Worker >= p.Workers {
		return fmt.Errorf("%w: sync round: worker %d of %d", ams.ErrBadRequest, p.Worker, p.Workers)
	}
	if p.Done && (len(p.Tables) > 0 || len(p.Dense) > 0) {
		return fmt.Errorf("%w: sync %s: a done part carries gradients", ams.ErrBadRequest, p.Round)
	}
	cat := s.cat.Load()
	for _, r := range p.Tables {
		ti, ok := cat.tables[r.Table]
		if !ok {
			return fmt.Errorf("%w: %q", ams.ErrUnknownTable, r.Table)
		}
		if len(r.Rows) != len(r.IDs)*ti.spec.Dim {
			return fmt.Errorf("%w: table %q: %d values for %d ids of dim %d", ams.ErrBadRequest, r.Table, len(r.Rows), len(r.IDs), ti.spec.Dim)
		}
	}
	for _, d := range p.Dense {
		if err := s.checkDense(d.Name, len(d.Grad)); err != nil {
			return err
		}
	}
	return checkStateEntries(p.State)
}

// PushRound takes worker p.Worker's part of round p.Round, and applies
// every round that is then complete, in order.
func (s *Shard) PushRound(version uint64, p RoundPart) error {
	if err := s.checkVersion(version); err != nil {
		return err
	}
	if err := s.checkPart(&p); err != nil {
		return err
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	sr, err := s.syncFor(version)
	if err != nil {
		return err
	}
	rec := &sr.rec
	switch {
	case rec.Workers == 0:
		rec.Workers = p.Workers
	case rec.Workers != p.Workers:
		return fmt.Errorf("%w: sync %s: %d workers, the rounds so far had %d", ams.ErrBadRequest, p.Round, p.Workers, rec.Workers)
	}
	if p.Round.Compare(rec.Next) < 0 || (p.Round.Epoch == rec.Next.Epoch && rec.left(p.Worker)) {
		return fmt.Errorf("%w: worker %d's part of %s (the shard is at %s)", ams.ErrRoundApplied, p.Worker, p.Round, rec.Next)
	}
	if !rec.window(p.Round) {
		return fmt.Errorf("%w: worker %d's part of %s: the shard is at %s and takes parts of %d rounds ahead in this epoch and the first %d of the next",
			ams.ErrRoundAhead, p.Worker, p.Round, rec.Next, MaxRoundsAhead, MaxRoundsAhead)
	}
	a := sr.acc[p.Round]
	if a == nil {
		a = &roundAcc{from: make([]bool, rec.Workers), tables: map[string]*tableAcc{}, dense: map[string][]float32{}}
		sr.acc[p.Round] = a
	}
	if a.from[p.Worker] {
		return fmt.Errorf("%w: worker %d's part of %s came twice", ams.ErrRoundApplied, p.Worker, p.Round)
	}
	a.add(&p, s.cat.Load())
	return s.advance(version, sr)
}

// add sums p into a.
func (a *roundAcc) add(p *RoundPart, cat *catalog) {
	a.from[p.Worker] = true
	if p.Done {
		a.done = append(a.done, p.Worker)
	} else {
		a.parts++
	}
	for _, r := range p.Tables {
		t := a.tables[r.Table]
		if t == nil {
			t = &tableAcc{dim: cat.tables[r.Table].spec.Dim, index: map[uint64]int{}}
			a.tables[r.Table] = t
			a.order = append(a.order, r.Table)
		}
		for k, id := range r.IDs {
			g := r.Rows[k*t.dim : (k+1)*t.dim]
			if j, ok := t.index[id]; ok {
				sum := t.sum[j*t.dim : (j+1)*t.dim]
				for i, v := range g {
					sum[i] += v
				}
				continue
			}
			t.index[id] = len(t.ids)
			t.ids = append(t.ids, id)
			t.sum = append(t.sum, g...)
		}
	}
	for _, d := range p.Dense {
		sum, ok := a.dense[d.Name]
		if !ok {
			a.dense[d.Name] = slices.Clone(d.Grad)
			a.dorder = append(a.dorder, d.Name)
			continue
		}
		for i, v := range d.Grad {
			sum[i] += v
		}
	}
	for _, e := range p.State { // the request's buffers may be reused once it returns
		a.state = append(a.state, StateEntry{Key: e.Key, Value: slices.Clone(e.Value)})
	}
}

// complete reports whether every worker has its part in a or has left.
func (rec *syncRecord) complete(a *roundAcc) bool {
	for w := range rec.Workers {
		if !rec.left(w) && (a == nil || !a.from[w]) {
			return false
		}
	}
	return true
}

// advance applies the complete rounds from rec.Next on, in order, and
// moves on to the next epoch once every worker has left the current one.
func (s *Shard) advance(version uint64, sr *syncRounds) error {
	rec := &sr.rec
	moved := false
	for {
		if len(rec.Left) == rec.Workers {
			rec.Next, rec.Left = Round{Epoch: rec.Next.Epoch + 1}, nil
			moved = true
			continue
		}
		a := sr.acc[rec.Next]
		if a == nil || !rec.complete(a) {
			break
		}
		if err := s.applyRound(version, a); err != nil {
			return fmt.Errorf("ams: apply sync %s: %w", rec.Next, err)
		}
		delete(sr.acc, rec.Next)
		for _, w := range a.done {
			rec.Left = append(rec.Left, w)
		}
		slices.Sort(rec.Left)
		if err := s.PutState(version, a.state); err != nil {
			return fmt.Errorf("ams: store sync %s's state: %w", rec.Next, err)
		}
		rec.Next.Iter++
		moved = true
	}
	if moved {
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := s.PutState(version, []StateEntry{{Key: SyncStateKey, Value: b}}); err != nil {
			return err
		}
		close(sr.advanced)
		sr.advanced = make(chan struct{})
	}
	return nil
}

// applyRound applies a's averaged gradients with the optimizers. The
// round holds every worker's ids, more than one request may carry: they
// are pushed in requests within the limits (withinLimits).
func (s *Shard) applyRound(version uint64, a *roundAcc) error {
	if a.parts == 0 {
		return nil
	}
	scale := 1 / float32(a.parts)
	var reqs []ams.TableRequest
	var dims []int
	for _, name := range a.order {
		t := a.tables[name]
		for i := range t.sum {
			t.sum[i] *= scale
		}
		reqs = append(reqs, ams.TableRequest{Table: name, IDs: t.ids, Rows: t.sum})
		dims = append(dims, t.dim)
	}
	for _, part := range withinLimits(reqs, dims, ams.MaxRequestIDs, ams.MaxRequestValues) {
		if err := s.Push(version, part); err != nil {
			return err
		}
	}
	for _, name := range a.dorder {
		g := a.dense[name]
		for i := range g {
			g[i] *= scale
		}
		if err := s.PushDense(version, name, g); err != nil {
			return err
		}
	}
	return nil
}

// withinLimits splits reqs, whose rows are dims[i] wide, into requests of
// at most maxIDs ids and maxValues values each (maxValues at least the
// widest row), in order, the rows of each id kept with it.
func withinLimits(reqs []ams.TableRequest, dims []int, maxIDs, maxValues int) [][]ams.TableRequest {
	var out [][]ams.TableRequest
	var cur []ams.TableRequest
	ids, values := 0, 0
	for i, r := range reqs {
		d := dims[i]
		for lo := 0; lo < len(r.IDs); {
			room := min(maxIDs-ids, (maxValues-values)/d)
			if room == 0 {
				out, cur, ids, values = append(out, cur), nil, 0, 0
				continue
			}
			hi := min(len(r.IDs), lo+room)
			cur = append(cur, ams.TableRequest{Table: r.Table, IDs: r.IDs[lo:hi], Rows: r.Rows[lo*d : hi*d]})
			ids, values = ids+hi-lo, values+(hi-lo)*d
			lo = hi
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// WaitRound waits until every round before r is applied, for at most
// maxWait; pending reports that it stopped waiting first.
func (s *Shard) WaitRound(ctx context.Context, version uint64, r Round, maxWait time.Duration) (pending bool, err error) {
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		if err := s.checkVersion(version); err != nil {
			return false, err
		}
		s.syncMu.Lock()
		sr, err := s.syncFor(version)
		if err != nil {
			s.syncMu.Unlock()
			return false, err
		}
		if sr.rec.Next.Compare(r) >= 0 {
			s.syncMu.Unlock()
			return false, nil
		}
		ch := sr.advanced
		s.syncMu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-s.done:
			return false, ams.ErrClosed
		}
	}
}
