package densenet

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The team runs the parts of parallel Gemm calls: the calling goroutine
// and up to GOMAXPROCS-1 helper goroutines, which the package starts when
// a call needs them and which exit after helperIdle without work.
//
// A call is handed over through memory, not through channels: the caller
// publishes it in the team's state word and takes parts itself, and a
// helper that is spinning (for helperSpin after its last part) sees the
// call at once and takes parts too; the caller then waits, spinning, for
// the parts taken to be done. A channel hand-off would make the helper
// runnable on the caller's P (and the caller, when it waits, on the
// helper's), so that the part waits for a parked thread to wake: about
// 100 µs on the VMs we measured, as long as half of a batch-256 layer's
// product (BENCHMARKS.md, issue 58). A helper that has stopped spinning
// parks on teamWake, which the caller signals without waiting: a parked
// helper joins late or not at all, and the call never waits for it.
//
// Invariants:
//
//  1. At most one call is published at a time (teamBusy); a Gemm that
//     finds the team busy runs its parts on its own goroutine.
//  2. team.state is gen<<genShift | parts<<partsShift | next. A part is
//     taken only by a compare-and-swap of the state from next to next+1
//     under the call's generation, so every part runs exactly once, and
//     a helper reads team.job only after such a swap: the caller wrote
//     the job before it stored the generation, so the job it reads is
//     that call's.
//  3. The caller returns only when team.done counts every part: a helper
//     adds its part to done after its last access to the job and to C.
//     Until the caller publishes the next call, the state says no part
//     is left, so a helper late for a call takes nothing of it.
//  4. Which goroutine runs a part does not change its result (a part is
//     a fixed block of C computed by gemmSerial), so results do not
//     depend on the number of goroutines.
const (
	partsShift = 20
	genShift   = 40
	fieldMask  = 1<<partsShift - 1
)

// helperSpin is how long a helper keeps looking for a call after its last
// part before it parks: long enough to span the gaps between the products
// of one training step (the element-wise layers between them), short
// enough that an idle helper soon gives its core back. While it spins it
// yields (runtime.Gosched) to any goroutine waiting for its P.
const helperSpin = 200 * time.Microsecond

// helperIdle is how long a parked helper waits for work before it exits:
// long enough to stay through a stream of requests or batches, short
// enough that no helper outlives the work by much (a test's leak check
// waits for them).
const helperIdle = 100 * time.Millisecond

// teamCall is the published call: its job, the scratch floats a part
// needs, the state word (invariant 2) and the parts done.
type teamCall struct {
	job   gemmJob
	need  int
	state atomic.Uint64
	done  atomic.Int64
}

var (
	team     teamCall
	teamBusy atomic.Bool
	teamWake = make(chan struct{})
	helpers  atomic.Int32 // helper goroutines running
)

// runParallel runs parts parts of j (part p is j.run(p*j.per)) on the
// calling goroutine, packing into buf, and on the helpers that join
// (invariant 1: on the caller alone when another call holds the team).
// need is the scratch floats a helper's part packs into (0: none).
func (j *gemmJob) runParallel(buf []float32, parts, need int) {
	if parts > fieldMask || !teamBusy.CompareAndSwap(false, true) {
		for lo := 0; lo < j.limit; lo += j.per {
			j.run(lo, buf)
		}
		return
	}
	startHelpers()
	team.job, team.need = *j, need
	team.done.Store(0)
	gen := team.state.Load()>>genShift + 1
	team.state.Store(gen<<genShift | uint64(parts)<<partsShift)
	for range helpers.Load() {
		select {
		case teamWake <- struct{}{}:
		default: // none parked: the others are spinning or busy
		}
	}
	done := team.work(buf)
	for team.done.Add(done) < int64(parts) {
		done = 0
		runtime.Gosched() // the parts left are running on helpers
	}
	team.job = gemmJob{} // drop the operands
	teamBusy.Store(false)
}

// work takes and runs parts of the published call until none is left,
// packing into buf (a helper passes nil: it takes a pooled buffer per
// part, unless the parts need none), and returns how many it ran; the
// caller adds them to done.
func (t *teamCall) work(buf []float32) int64 {
	var n int64
	for {
		s := t.state.Load()
		next, parts := s&fieldMask, s>>partsShift&fieldMask
		if next >= parts {
			return n
		}
		if !t.state.CompareAndSwap(s, s+1) {
			continue // another goroutine took that part
		}
		lo := int(next) * t.job.per
		if buf != nil || t.need == 0 {
			t.job.run(lo, buf)
		} else {
			p := getScratch(t.need)
			t.job.run(lo, *p)
			putScratch(p)
		}
		n++
	}
}

// startHelpers makes sure GOMAXPROCS-1 (at least one) helper goroutines
// are running.
func startHelpers() {
	want := int32(max(1, runtime.GOMAXPROCS(0)-1))
	for {
		n := helpers.Load()
		if n >= want {
			return
		}
		if helpers.CompareAndSwap(n, n+1) {
			go helper()
		}
	}
}

// helper runs parts of published calls: it spins for helperSpin after
// its last part, then parks on teamWake until helperIdle passes without
// a call, and exits.
func helper() {
	idle := time.NewTimer(helperIdle)
	defer idle.Stop()
	for {
		until := time.Now().Add(helperSpin)
		for time.Now().Before(until) {
			if n := team.work(nil); n > 0 {
				team.done.Add(n)
				until = time.Now().Add(helperSpin)
				continue
			}
			runtime.Gosched()
		}
		idle.Reset(helperIdle) // no stale tick since Go 1.23
		select {
		case <-teamWake:
			if n := team.work(nil); n > 0 {
				team.done.Add(n)
			}
		case <-idle.C:
			helpers.Add(-1)
			return
		}
	}
}
