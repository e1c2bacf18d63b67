package trainrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/xdlgo/xps/job"
)

// Ring is a run's push ring: a fixed set of push buffers, one taken
// before a batch's gradients are written and given back when its push is
// done, so that at most Len pushes are in flight (the in-flight bound).
// The first error of an asynchronous push is kept until Drain returns it.
//
// Take, Go and Sync are for the run's goroutine; the pushes Go starts run
// on goroutines of their own and touch only their slot.
type Ring[B any] struct {
	name string
	free chan *Slot[B]
	push func(context.Context, *B) error
	wg   sync.WaitGroup
	wait time.Duration // Take's waiting; the run's goroutine only
	last *Slot[B]      // the slot of the push Go started last; the run's goroutine only
	mu   sync.Mutex
	err  error // the first asynchronous push error; guarded by mu
}

// Slot is one push buffer of a ring: Buf is the model's, the rest the
// ring's (the push's context and its timer, made once so that a push
// costs no allocation).
type Slot[B any] struct {
	Buf   B
	ring  *Ring[B]
	ctx   context.Context
	timer *job.PushTimer
	run   func()
	// fin receives when the slot's push is done (before the slot is
	// free again); Go empties it, WaitLast waits on it.
	fin chan struct{}
}

// NewRing returns a ring of n buffers made by newBuf, whose asynchronous
// pushes call push. name prefixes the push errors ("worker: asynchronous
// push: ...").
func NewRing[B any](name string, n int, newBuf func() B, push func(context.Context, *B) error) *Ring[B] {
	r := &Ring[B]{name: name, free: make(chan *Slot[B], n), push: push}
	for range n {
		s := &Slot[B]{Buf: newBuf(), ring: r, timer: job.NewPushTimer(), fin: make(chan struct{}, 1)}
		s.run = func() {
			defer r.wg.Done()
			err := s.pushWith(s.ctx, r.push)
			s.ctx = nil
			s.fin <- struct{}{} // emptied by Go: never blocks
			r.free <- s         // capacity equals the ring's size: never blocks
			if err != nil {
				r.fail(err)
			}
		}
		r.free <- s
	}
	return r
}

// Len is the ring's size: the bound on pushes in flight.
func (r *Ring[B]) Len() int { return cap(r.free) }

// Take waits for a free buffer (the in-flight bound) or ctx's end.
func (r *Ring[B]) Take(ctx context.Context) (*Slot[B], error) {
	select {
	case s := <-r.free:
		return s, nil
	default:
	}
	w0 := time.Now()
	defer func() { r.wait += time.Since(w0) }()
	select {
	case s := <-r.free:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Go starts s's push on a goroutine of its own; s returns to the ring
// when the push is done, and its error, if the first, is kept for Drain.
// The push is waited for even when ctx ends (job.PushContext): the run's
// stop drains it.
func (r *Ring[B]) Go(ctx context.Context, s *Slot[B]) {
	r.wg.Add(1)
	s.ctx = ctx
	select { // a finish no WaitLast took
	case <-s.fin:
	default:
	}
	r.last = s
	go s.run()
}

// WaitLast waits until the push Go started last is done (its error, if
// any, is kept for Drain), or ctx's end. It returns at once when that push
// was already waited for, or none was started.
func (r *Ring[B]) WaitLast(ctx context.Context) error {
	s := r.last
	if s == nil {
		return nil
	}
	select {
	case <-s.fin:
		r.last = nil
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sync pushes s and waits for the push (a batch of the sequential
// loop); s returns to the ring, and the push's error is Sync's, not kept
// for Drain.
func (r *Ring[B]) Sync(ctx context.Context, s *Slot[B]) error {
	err := s.pushWith(ctx, r.push)
	r.free <- s
	return err
}

// Put gives back a buffer taken and not pushed.
func (r *Ring[B]) Put(s *Slot[B]) { r.free <- s }

// Drain waits until every push started is done and returns the first
// asynchronous push error (kept: a failed run stays failed).
func (r *Ring[B]) Drain() error {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Waited is how long Take waited for a free buffer: training time the
// pushes in flight held up.
func (r *Ring[B]) Waited() time.Duration { return r.wait }

func (s *Slot[B]) pushWith(ctx context.Context, push func(context.Context, *B) error) error {
	pctx := s.timer.Start(ctx)
	defer s.timer.Stop()
	return push(pctx, &s.Buf)
}

func (r *Ring[B]) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = fmt.Errorf("%s: asynchronous push: %w", r.name, err)
	}
}
