package trainrun

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRingBoundsInFlight: with n buffers, the n+1st Take waits until a
// push is done, and the ring never has more than n pushes running.
func TestRingBoundsInFlight(t *testing.T) {
	const n = 3
	release, started := make(chan struct{}), make(chan struct{}, n)
	var running, most atomic.Int32
	r := NewRing("test", n, func() int { return 0 }, func(ctx context.Context, b *int) error {
		k := running.Add(1)
		for m := most.Load(); k > m && !most.CompareAndSwap(m, k); m = most.Load() {
		}
		started <- struct{}{}
		<-release
		running.Add(-1)
		return nil
	})
	ctx := context.Background()
	for i := range n {
		s, err := r.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Buf = i
		r.Go(ctx, s)
	}
	for range n {
		<-started
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Take(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Take with every buffer in flight and ctx ended: %v, want context.Canceled", err)
	}
	close(release)
	if err := r.Drain(); err != nil {
		t.Fatal(err)
	}
	if most.Load() != n || r.Len() != n {
		t.Fatalf("%d pushes ran at once, ring of %d; want %d", most.Load(), r.Len(), n)
	}
	for range n { // every buffer is back
		if _, err := r.Take(cctx); err != nil {
			t.Fatalf("a buffer not back after Drain: %v", err)
		}
	}
}

// TestRingKeepsFirstError: Drain returns the first push error, named,
// and keeps it after later pushes succeed.
func TestRingKeepsFirstError(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	errs := []error{first, second, nil}
	step := make(chan struct{}, 1)
	var i atomic.Int32
	r := NewRing("model", 1, func() struct{} { return struct{}{} }, func(context.Context, *struct{}) error {
		defer func() { step <- struct{}{} }()
		return errs[i.Add(1)-1]
	})
	ctx := context.Background()
	for range errs {
		s, err := r.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.Go(ctx, s)
		<-step
	}
	err := r.Drain()
	if !errors.Is(err, first) || errors.Is(err, second) || err.Error() != "model: asynchronous push: first" {
		t.Fatalf("Drain: %v, want the first error, named", err)
	}
	if err := r.Drain(); !errors.Is(err, first) {
		t.Fatalf("a second Drain: %v, want the first error kept", err)
	}
}

// TestRingPushOutlivesTheRunsContext: a push started with a context that
// then ends still runs under a live context (the stop drains it), and
// Sync returns its buffer.
func TestRingPushOutlivesTheRunsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	var pushErr atomic.Value
	want := errors.New("sync push")
	r := NewRing("test", 1, func() int { return 0 }, func(pctx context.Context, b *int) error {
		if *b == 1 { // the Sync push below
			return want
		}
		close(started)
		<-release
		pushErr.Store(pctx.Err() == nil)
		return nil
	})
	s, err := r.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.Go(ctx, s)
	<-started
	cancel()
	close(release)
	if err := r.Drain(); err != nil {
		t.Fatal(err)
	}
	if live, _ := pushErr.Load().(bool); !live {
		t.Fatal("the push's context ended with the run's")
	}
	s, err = r.Take(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Buf = 1
	if err := r.Sync(ctx, s); err != want {
		t.Fatalf("Sync: %v, want its push's error", err)
	}
	if err := r.Drain(); err != nil {
		t.Fatalf("a Sync push's error kept for Drain: %v", err)
	}
	if _, err := r.Take(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRingWaitLast: WaitLast returns once the push Go started last is
// done, not before, and at once when it was waited for or none ran.
func TestRingWaitLast(t *testing.T) {
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var done [2]atomic.Bool
	r := NewRing("test", 2, func() int { return 0 }, func(ctx context.Context, b *int) error {
		<-release[*b]
		done[*b].Store(true)
		return nil
	})
	ctx := context.Background()
	if err := r.WaitLast(ctx); err != nil { // none started
		t.Fatal(err)
	}
	for i := range 2 {
		s, err := r.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Buf = i
		r.Go(ctx, s)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.WaitLast(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitLast with the last push running and ctx ended: %v, want context.Canceled", err)
	}
	close(release[1]) // the last push ends first
	if err := r.WaitLast(ctx); err != nil {
		t.Fatal(err)
	}
	if !done[1].Load() || done[0].Load() {
		t.Fatalf("WaitLast returned with pushes done %v %v, want the last one only", done[0].Load(), done[1].Load())
	}
	if err := r.WaitLast(cctx); err != nil { // already waited for
		t.Fatalf("a second WaitLast: %v", err)
	}
	close(release[0])
	if err := r.Drain(); err != nil {
		t.Fatal(err)
	}
	s, err := r.Take(ctx) // a slot whose finish nobody waited for is reused
	if err != nil {
		t.Fatal(err)
	}
	s.Buf = 0
	release[0] = make(chan struct{})
	done[0].Store(false)
	r.Go(ctx, s)
	close(release[0])
	if err := r.WaitLast(ctx); err != nil || !done[0].Load() {
		t.Fatalf("WaitLast on a reused slot: %v, push done %v", err, done[0].Load())
	}
	if err := r.Drain(); err != nil {
		t.Fatal(err)
	}
}
