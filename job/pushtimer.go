package job

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// PushTimer makes the contexts of one buffer's pushes, one push at a
// time, as PushContext does, without allocating per push: the context is
// the timer itself, and one time.Timer, made once, ends it. A worker
// keeps one per push buffer.
//
// Start returns the push's context: the values of the ctx it is given,
// not cancelled with it, ended with context.DeadlineExceeded PushTimeout
// after Start. Stop ends the push's use of it: the context is not used
// after Stop (unlike PushContext's cancel, Stop does not close its Done
// channel). Start and Stop alternate, on one goroutine at a time; the
// context's methods are safe for concurrent use between them.
type PushTimer struct {
	timeout time.Duration
	timer   *time.Timer // calls expire timeout after Start

	// from is the ctx of the last Start and parent its
	// context.WithoutCancel, reused while Start is given the same ctx.
	from, parent context.Context

	mu struct {
		sync.Mutex
		live     bool // between Start and Stop
		deadline time.Time
		done     chan struct{} // closed when the push's time is up
		err      error         // context.DeadlineExceeded once done is closed
	}
}

// NewPushTimer returns a PushTimer whose contexts end after PushTimeout.
func NewPushTimer() *PushTimer { return newPushTimer(PushTimeout) }

func newPushTimer(timeout time.Duration) *PushTimer {
	p := &PushTimer{timeout: timeout}
	p.mu.done = make(chan struct{})
	p.timer = time.AfterFunc(timeout, p.expire)
	p.timer.Stop()
	return p
}

// Start returns the context of a push (see PushTimer).
func (p *PushTimer) Start(ctx context.Context) context.Context {
	if p.from == nil || !sameContext(p.from, ctx) {
		p.from, p.parent = ctx, context.WithoutCancel(ctx)
	}
	p.mu.Lock()
	if p.mu.err != nil { // the last push ran out of time
		p.mu.done, p.mu.err = make(chan struct{}), nil
	}
	p.mu.live, p.mu.deadline = true, time.Now().Add(p.timeout)
	p.mu.Unlock()
	p.timer.Reset(p.timeout)
	return (*pushContext)(p)
}

// Stop ends the push of the last Start.
func (p *PushTimer) Stop() {
	p.timer.Stop()
	p.mu.Lock()
	p.mu.live = false
	p.mu.Unlock()
}

// expire ends the push in progress once its deadline has passed; a timer
// of an earlier push that fires late finds the push stopped or its
// deadline ahead.
func (p *PushTimer) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.live || p.mu.err != nil || time.Now().Before(p.mu.deadline) {
		return
	}
	p.mu.err = context.DeadlineExceeded
	close(p.mu.done)
}

// sameContext reports whether a and b are the same context, without
// comparing values of a type that cannot be compared.
func sameContext(a, b context.Context) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// pushContext is a PushTimer as the context of its push.
type pushContext PushTimer

func (c *pushContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.deadline, true
}

func (c *pushContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.done
}

func (c *pushContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.err
}

func (c *pushContext) Value(key any) any { return c.parent.Value(key) }
