package job

import (
	"context"
	"errors"
	"testing"
	"time"
)

type pushKey struct{}

// TestPushTimer: a push's context carries its ctx's values, outlives its
// cancellation, and ends with context.DeadlineExceeded once its time is
// up; the next push gets a fresh one, and a push stopped in time is
// never ended.
func TestPushTimer(t *testing.T) {
	p := newPushTimer(20 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), pushKey{}, "run"))
	cancel()
	pctx := p.Start(ctx)
	if pctx.Err() != nil || pctx.Value(pushKey{}) != "run" {
		t.Fatalf("a push's context: err %v, value %v; want nil and the run's value", pctx.Err(), pctx.Value(pushKey{}))
	}
	if context.Cause(pctx) != nil {
		t.Fatalf("context.Cause of a live push = %v, want nil (not the cancelled parent's)", context.Cause(pctx))
	}
	if d, ok := pctx.Deadline(); !ok || time.Until(d) > 20*time.Millisecond {
		t.Fatalf("deadline %v (%v), want one within the timeout", d, ok)
	}
	select {
	case <-pctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the push's context did not end after its timeout")
	}
	if !errors.Is(pctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err of a push out of time = %v, want context.DeadlineExceeded", pctx.Err())
	}
	p.Stop()

	pctx = p.Start(ctx)
	if pctx.Err() != nil {
		t.Fatalf("the next push starts ended: %v", pctx.Err())
	}
	done := pctx.Done()
	p.Stop()
	p.expire() // the stopped push's timer fires late
	select {
	case <-done:
		t.Fatal("a push stopped in time was ended")
	default:
	}
	p.timeout = time.Hour
	pctx = p.Start(ctx)
	p.expire() // an earlier push's timer fires during this one
	if pctx.Err() != nil {
		t.Fatalf("a push within its time ended: %v", pctx.Err())
	}
	p.Stop()
}

// TestPushTimerAllocs: a push's context costs no allocation once the
// timer has seen its ctx.
func TestPushTimerAllocs(t *testing.T) {
	p := NewPushTimer()
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		pctx := p.Start(ctx)
		_ = pctx.Err()
		p.Stop()
	}); n != 0 {
		t.Fatalf("%v allocations per push, want 0", n)
	}
}
