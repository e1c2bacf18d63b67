package dslide

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/sparsenet/slide"
)

// newOwners returns the W owners of base, for workers workers at version
// 1, as Peers.
func newOwners(t *testing.T, base slide.Config, W, workers int) (Partition, []*Owner, []Peer) {
	t.Helper()
	part, err := Even(base.Dim, W)
	if err != nil {
		t.Fatal(err)
	}
	owners, peers := make([]*Owner, W), make([]Peer, W)
	for o := range owners {
		if owners[o], err = NewOwner(base, part, o, workers, 1); err != nil {
			t.Fatal(err)
		}
		peers[o] = owners[o]
		t.Cleanup(func() { owners[o].Close() })
	}
	return part, owners, peers
}

// TestRoundsEqualOneLayer: W workers, each with its own batch, training
// in rounds against W owners (the workers concurrent), compute what one
// in-process Layer of W owners computes on the round's batches together:
// each worker's loss is the mean over its own samples, its dx that
// layer's rows scaled to its own batch's mean loss, and the owners'
// weights stay equal to the layer's (their dense predictions agree). One
// worker runs out of data in the last rounds (empty batches).
func TestRoundsEqualOneLayer(t *testing.T) {
	const d, din, k, rounds = 41, 6, 5, 4
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 2, Seed: 11, LearningRate: 0.02}
	for _, W := range []int{1, 2, 3} {
		ref, err := New(base, W)
		if err != nil {
			t.Fatal(err)
		}
		part, _, peers := newOwners(t, base, W, W)
		workers := make([]*Worker, W)
		for w := range workers {
			workers[w] = &Worker{Part: part, Peers: peers, Index: w, Version: 1}
		}
		rng := rand.New(rand.NewPCG(uint64(W), 3))
		for r := 0; r < rounds; r++ {
			xs, ls := roundBatches(rng, W, r == rounds-1, din, d)
			checkRound(t, ref, workers, xs, ls, din)
		}
		// Same weights: the merged dense predictions are the layer's.
		x, _ := randBatch(rng, 7, din, d)
		want, got := make([]int32, 7*k), make([]int32, 7*k)
		ref.PredictDense(x, 7, k, want)
		if err := workers[0].Predict(context.Background(), x, 7, k, false, false, got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("W %d: predict %v, the layer %v", W, got, want)
		}
		ref.Close()
	}
}

// TestRoundProtocol: the round's pause bit reaches every worker; a request
// of a newer attempt is pending, of an older one stale; a bad label is
// refused before anything is sent; protocol misuse is an error, never a
// hang or a panic.
func TestRoundProtocol(t *testing.T) {
	const d, din = 20, 4
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 1, Seed: 3, LearningRate: 0.01}
	part, owners, peers := newOwners(t, base, 2, 2)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 1))
	x, labels := randBatch(rng, 3, din, d)
	w0 := &Worker{Part: part, Peers: peers, Index: 0, Version: 1}
	w1 := &Worker{Part: part, Peers: peers, Index: 1, Version: 1}

	// The workers were asked to pause for requests 4 and 7: both learn the
	// latest from the round.
	var wg sync.WaitGroup
	var info0, info1 RoundInfo
	var err0, err1 error
	wg.Add(2)
	go func() { defer wg.Done(); _, info0, err0 = w0.TrainBatch(ctx, x, 3, labels, nil, 4) }()
	go func() { defer wg.Done(); _, info1, err1 = w1.TrainBatch(ctx, x, 3, labels, nil, 7) }()
	wg.Wait()
	if err0 != nil || err1 != nil || info0.Pause != 7 || info1.Pause != 7 || info0.Samples != 6 {
		t.Fatalf("round with a pause: %+v %v, %+v %v", info0, err0, info1, err1)
	}

	// A round waiting for the other worker replies pending after Wait and
	// calls Waiting, whose error ends it.
	stop := errors.New("stop waiting")
	calls := 0
	w0.Wait = time.Millisecond
	w0.Waiting = func(context.Context) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	}
	if _, _, err := w0.TrainBatch(ctx, x, 3, labels, nil, 0); !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("a round without worker 1: %v after %d waits", err, calls)
	}

	checkRequestErrors(t, owners, x, labels)
	// A bad label: refused before any owner hears of it (worker 1 can
	// still contribute to round 1 after).
	bad := [][]int32{{0}, {d}, {}}
	if _, _, err := w1.TrainBatch(ctx, x, 3, bad, nil, 0); !errors.Is(err, slide.ErrBadLabel) {
		t.Fatalf("label %d of %d: %v", d, d, err)
	}
	// Round 1 completes for worker 1 once worker 0 polls again.
	w0.Waiting = nil
	go func() {
		_, err := owners[0].Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 0, Poll: true, Wait: time.Minute})
		_ = err
	}()
	done := make(chan error, 1)
	go func() { _, _, err := w1.TrainBatch(ctx, x, 3, labels, nil, 0); done <- err }()
	// Worker 0 sends its Globals for round 1 (it polled its Partials).
	for _, o := range owners {
		for {
			rep, err := o.Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 0, Poll: true, Wait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Pending {
				break
			}
		}
		if _, err := o.Backward(ctx, BackwardRequest{Version: 1, Round: 1, Worker: 0, Globals: make([]slide.Global, 3), Wait: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("worker 1's round 1: %v", err)
	}
	// Close: later requests are pending (the attempt is over).
	owners[1].Close()
	if rep, err := owners[1].Forward(ctx, ForwardRequest{Version: 1, Round: 2, Worker: 0, N: 0}); err != nil || !rep.Pending {
		t.Fatalf("after Close: %+v, %v", rep, err)
	}
}

// roundBatches returns W workers' batches for a round: worker w has 3+w
// samples, none for the last worker in the last round when W > 1.
func roundBatches(rng *rand.Rand, W int, last bool, din, d int) (xs [][]float32, ls [][][]int32) {
	xs, ls = make([][]float32, W), make([][][]int32, W)
	for w := range W {
		n := 3 + w
		if W > 1 && w == W-1 && last {
			n = 0
		}
		xs[w], ls[w] = randBatch(rng, n, din, d)
	}
	return xs, ls
}

// checkRound trains one round of the workers (concurrently) on their
// batches xs, ls and ref on them together, and fails t unless each
// worker's dx is ref's for its rows, scaled from the round's mean loss to
// its own batch's, and their losses make ref's.
func checkRound(t *testing.T, ref *Layer, workers []*Worker, xs [][]float32, ls [][][]int32, din int) {
	t.Helper()
	W := len(workers)
	var x []float32
	var labels [][]int32
	withLabels := 0
	for w := range W {
		x, labels = append(x, xs[w]...), append(labels, ls[w]...)
	}
	for _, l := range labels {
		if len(l) > 0 {
			withLabels++
		}
	}
	want := make([]float32, len(x))
	refLoss, err := ref.TrainBatch(x, len(labels), labels, want)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	losses, dxs, errs := make([]float64, W), make([][]float32, W), make([]error, W)
	for w := range W {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dxs[w] = make([]float32, len(xs[w]))
			losses[w], _, errs[w] = workers[w].TrainBatch(context.Background(), xs[w], len(ls[w]), ls[w], dxs[w], 0)
		}()
	}
	wg.Wait()
	off, sum := 0, 0.0
	for w := range W {
		if errs[w] != nil {
			t.Fatalf("W %d worker %d: %v", W, w, errs[w])
		}
		wl := 0
		for _, l := range ls[w] {
			if len(l) > 0 {
				wl++
			}
		}
		sum += losses[w] * float64(wl)
		for i, v := range dxs[w] {
			exp := float64(want[off*din+i]) * float64(withLabels) / float64(max(wl, 1))
			if !closeTo(float64(v), exp, 1e-4) {
				t.Fatalf("W %d worker %d: dx[%d] = %v, want %v", W, w, i, v, exp)
			}
		}
		off += len(ls[w])
	}
	if !closeTo(sum/float64(withLabels), refLoss, 1e-5) {
		t.Fatalf("W %d: the workers' losses make %v over the round, the layer's %v", W, sum/float64(withLabels), refLoss)
	}
}

// checkRequestErrors: with worker 0's contribution to round 1 made, a
// second one is an error, and so are a poll without one, a backward
// before the forward, an older version or round, a worker out of range
// and a batch of the wrong shape; a newer version is pending; Predict
// works while the round collects.
func checkRequestErrors(t *testing.T, owners []*Owner, x []float32, labels [][]int32) {
	t.Helper()
	ctx := context.Background()
	const din = 4
	req := ForwardRequest{Version: 1, Round: 1, Worker: 0, N: 3, X: x, Labels: labels}
	if _, err := owners[0].Forward(ctx, req); !errors.Is(err, ErrRound) {
		t.Fatalf("a second contribution: %v", err)
	}
	if _, err := owners[0].Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 1, Poll: true}); !errors.Is(err, ErrRound) {
		t.Fatalf("a poll without contributing: %v", err)
	}
	if _, err := owners[0].Backward(ctx, BackwardRequest{Version: 1, Round: 1, Worker: 0, Globals: make([]slide.Global, 3)}); !errors.Is(err, ErrRound) {
		t.Fatalf("a backward before the forward: %v", err)
	}
	// Versions: newer pending, older stale; worker out of range.
	if rep, err := owners[0].Forward(ctx, ForwardRequest{Version: 2, Round: 0, Worker: 1, Poll: true}); err != nil || !rep.Pending {
		t.Fatalf("a newer version: %+v, %v", rep, err)
	}
	if _, err := owners[0].Forward(ctx, ForwardRequest{Version: 0, Round: 1, Worker: 1}); !errors.Is(err, ErrStale) {
		t.Fatalf("an older version: %v", err)
	}
	if _, err := owners[0].Forward(ctx, ForwardRequest{Version: 1, Round: 0, Worker: 1, Poll: true}); !errors.Is(err, ErrStale) {
		t.Fatalf("an older round: %v", err)
	}
	if _, err := owners[0].Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 2}); !errors.Is(err, ErrRound) {
		t.Fatalf("worker 2 of 2: %v", err)
	}
	if _, err := owners[0].Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 1, N: 2, X: x}); !errors.Is(err, ErrRound) {
		t.Fatalf("a batch of the wrong shape: %v", err)
	}
	for _, bad := range []int32{-1, 20} {
		req := ForwardRequest{Version: 1, Round: 1, Worker: 1, N: 1, X: x[:din], Labels: [][]int32{{bad}}}
		if _, err := owners[0].Forward(ctx, req); !errors.Is(err, ErrRound) {
			t.Fatalf("label %d of 20 sent straight to an owner: %v", bad, err)
		}
	}
	if _, err := owners[0].Predict(ctx, PredictRequest{Version: 1, N: 1, K: 2, X: x[:din]}); err != nil {
		t.Fatalf("predict while round 1 collects: %v", err)
	}
}

// TestDxKeptWhileNextRoundCollects: a worker may fetch its dx of a round
// after another worker has already contributed to the next round (its
// request was waiting when the backward ran); the dx is there until the
// next round's forward.
func TestDxKeptWhileNextRoundCollects(t *testing.T) {
	const d, din = 12, 3
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 1, Seed: 2, LearningRate: 0.01}
	_, owners, _ := newOwners(t, base, 1, 2)
	o, ctx := owners[0], context.Background()
	x, labels := randBatch(rand.New(rand.NewPCG(3, 4)), 2, din, d)
	for w := range 2 {
		if _, err := o.Forward(ctx, ForwardRequest{Version: 1, Worker: w, N: 2, X: x, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	glob := make([]slide.Global, 2)
	for w := range 2 {
		rep, err := o.Forward(ctx, ForwardRequest{Version: 1, Worker: w, Poll: true})
		if err != nil || rep.Pending {
			t.Fatalf("worker %d's partials: %+v, %v", w, rep, err)
		}
		forged := []slide.Global{{Labels: 1}, {Labels: 1, Sum: 1}} // a sum of 0 would write NaN into the weights
		if _, err := o.Backward(ctx, BackwardRequest{Version: 1, Worker: w, Globals: forged}); !errors.Is(err, ErrRound) {
			t.Fatalf("Globals with labels and a zero sum: %v", err)
		}
		slide.Combine([][]slide.Partial{rep.Parts}, glob)
		if _, err := o.Backward(ctx, BackwardRequest{Version: 1, Worker: w, Globals: glob}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := o.Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 1, N: 2, X: x, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	rep, err := o.Backward(ctx, BackwardRequest{Version: 1, Worker: 0, Poll: true})
	if err != nil || rep.Pending || len(rep.Dx) != 2*din {
		t.Fatalf("worker 0's dx of round 0 while round 1 collects: %+v, %v", rep, err)
	}
	if _, err := o.Forward(ctx, ForwardRequest{Version: 1, Round: 1, Worker: 0, N: 2, X: x, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Backward(ctx, BackwardRequest{Version: 1, Worker: 0, Poll: true}); !errors.Is(err, ErrStale) {
		t.Fatalf("round 0's dx after round 1's forward: %v", err)
	}
}

// TestDenseExchangeSameModel: rounds exchanging every owner's logits
// (dense model parallelism, Worker.Dense) train the same model as rounds
// exchanging Partials: the same losses and dx, to float rounding.
func TestDenseExchangeSameModel(t *testing.T) {
	const d, din = 29, 5
	base := slide.Config{Dim: d, InputDim: din, Sparsity: 1, Threads: 2, Seed: 4, LearningRate: 0.02}
	run := func(dense bool) ([]float64, [][]float32) {
		part, _, peers := newOwners(t, base, 2, 2)
		ws := []*Worker{{Part: part, Peers: peers, Index: 0, Version: 1, Dense: dense}, {Part: part, Peers: peers, Index: 1, Version: 1, Dense: dense}}
		rng := rand.New(rand.NewPCG(8, 9))
		var losses []float64
		var dxs [][]float32
		for range 3 {
			xs, ls := roundBatches(rng, 2, false, din, d)
			var wg sync.WaitGroup
			loss, dx, errs := make([]float64, 2), make([][]float32, 2), make([]error, 2)
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					dx[w] = make([]float32, len(xs[w]))
					loss[w], _, errs[w] = ws[w].TrainBatch(context.Background(), xs[w], len(ls[w]), ls[w], dx[w], 0)
				}()
			}
			wg.Wait()
			for w := range 2 {
				if errs[w] != nil {
					t.Fatal(errs[w])
				}
			}
			losses, dxs = append(losses, loss...), append(dxs, dx...)
		}
		return losses, dxs
	}
	wantL, wantDx := run(false)
	gotL, gotDx := run(true)
	for i := range wantL {
		if !closeTo(gotL[i], wantL[i], 1e-5) {
			t.Fatalf("loss %d: dense exchange %v, Partials %v", i, gotL[i], wantL[i])
		}
		for j := range wantDx[i] {
			if !closeTo(float64(gotDx[i][j]), float64(wantDx[i][j]), 1e-4) {
				t.Fatalf("dx %d[%d]: dense exchange %v, Partials %v", i, j, gotDx[i][j], wantDx[i][j])
			}
		}
	}
}
