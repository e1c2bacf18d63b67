package dslidenet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdlgo/xps/sparsenet/slide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts a gRPC server of sv on loopback and returns a Client to
// it; both end with the test.
func serve(t *testing.T, sv *Server) (*Client, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(ServerOption())
	sv.Register(s)
	go s.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	stop := func() { s.Stop() }
	t.Cleanup(func() { conn.Close(); s.Stop() })
	return NewClient(conn), stop
}

func batch(rng *rand.Rand, n, din, d int) ([]float32, [][]int32) {
	x := make([]float32, n*din)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	labels := make([][]int32, n)
	for i := 1; i < n; i++ {
		for range 1 + i%3 {
			labels[i] = append(labels[i], int32(rng.IntN(d)))
		}
	}
	return x, labels
}

// train runs rounds of 2 workers whose peers are given, from the same
// seeds, and returns every dx and loss and the final merged predictions.
func train(t *testing.T, base slide.Config, peers [2][]dslide.Peer, part dslide.Partition) ([][]float32, []float64, []int32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var ws [2]*dslide.Worker
	for w := range ws {
		ws[w] = &dslide.Worker{Part: part, Peers: peers[w], Index: w, Version: 1}
	}
	var dxs [][]float32
	var losses []float64
	for r := 0; r < 4; r++ {
		var xs [2][]float32
		var ls [2][][]int32
		var got [2][]float32
		var loss [2]float64
		var errs [2]error
		for w := range 2 {
			xs[w], ls[w] = batch(rng, 4+w, base.InputDim, base.Dim)
			got[w] = make([]float32, len(xs[w]))
		}
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				loss[w], _, errs[w] = ws[w].TrainBatch(context.Background(), xs[w], len(ls[w]), ls[w], got[w], 0)
			}()
		}
		wg.Wait()
		for w := range 2 {
			if errs[w] != nil {
				t.Fatalf("round %d worker %d: %v", r, w, errs[w])
			}
			dxs, losses = append(dxs, got[w]), append(losses, loss[w])
		}
	}
	x, _ := batch(rng, 5, base.InputDim, base.Dim)
	pred := make([]int32, 5*3)
	if err := ws[1].Predict(context.Background(), x, 5, 3, true, true, pred); err != nil {
		t.Fatal(err)
	}
	return dxs, losses, pred
}

// TestOverGRPC: two workers whose shares are reached over real gRPC (each
// holds its own share directly, the other's through its process's
// Server) train exactly as the same owners called in process: every dx,
// loss and prediction is bit for bit the same.
func TestOverGRPC(t *testing.T) {
	base := slide.Config{Dim: 53, InputDim: 7, Sparsity: 0.5, Threads: 2, Seed: 9, LearningRate: 0.01}
	part, err := dslide.Even(base.Dim, 2)
	if err != nil {
		t.Fatal(err)
	}
	owners := func() [2]*dslide.Owner {
		var o [2]*dslide.Owner
		for i := range o {
			if o[i], err = dslide.NewOwner(base, part, i, 2, 1); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { o[i].Close() })
		}
		return o
	}
	local := owners()
	wantDx, wantLoss, wantPred := train(t, base, [2][]dslide.Peer{{local[0], local[1]}, {local[0], local[1]}}, part)

	remote := owners()
	var sv [2]Server
	var cl [2]*Client
	for i := range sv {
		sv[i].Set(remote[i])
		cl[i], _ = serve(t, &sv[i])
	}
	gotDx, gotLoss, gotPred := train(t, base, [2][]dslide.Peer{{remote[0], cl[1]}, {cl[0], remote[1]}}, part)
	if !reflect.DeepEqual(gotDx, wantDx) || !slices.Equal(gotLoss, wantLoss) || !slices.Equal(gotPred, wantPred) {
		t.Fatalf("over gRPC: losses %v, predictions %v; in process %v, %v", gotLoss, gotPred, wantLoss, wantPred)
	}
}

// TestServerStates: a server without an owner, or with an older one,
// answers Pending; a request of an older version comes back as
// dslide.ErrStale, a malformed one as dslide.ErrRound; a stopped server
// fails the call instead of hanging it.
func TestServerStates(t *testing.T) {
	base := slide.Config{Dim: 10, InputDim: 3, Sparsity: 1, Threads: 1, Seed: 1, LearningRate: 0.01}
	part, _ := dslide.Even(10, 1)
	var sv Server
	cl, stop := serve(t, &sv)
	ctx := context.Background()
	poll := dslide.ForwardRequest{Version: 2, Worker: 0, Poll: true}
	if rep, err := cl.Forward(ctx, poll); err != nil || !rep.Pending {
		t.Fatalf("no owner: %+v, %v", rep, err)
	}
	if rep, err := cl.Predict(ctx, dslide.PredictRequest{Version: 1, N: 1, K: 1, X: make([]float32, 3)}); err != nil || !rep.Pending {
		t.Fatalf("predict, no owner: %+v, %v", rep, err)
	}
	o, err := dslide.NewOwner(base, part, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	sv.Set(o)
	if rep, err := cl.Backward(ctx, dslide.BackwardRequest{Version: 2, Poll: true}); err != nil || !rep.Pending {
		t.Fatalf("an older owner: %+v, %v", rep, err)
	}
	if _, err := cl.Forward(ctx, dslide.ForwardRequest{Version: 0}); !errors.Is(err, dslide.ErrStale) {
		t.Fatalf("an older request: %v", err)
	}
	if _, err := cl.Forward(ctx, dslide.ForwardRequest{Version: 1, N: 2, X: make([]float32, 3), Labels: make([][]int32, 2)}); !errors.Is(err, dslide.ErrRound) {
		t.Fatalf("a request of the wrong shape: %v", err)
	}
	if _, err := cl.Forward(ctx, dslide.ForwardRequest{Version: 1, N: 2, X: make([]float32, 6)}); err == nil {
		t.Fatal("a request with no label lists for its 2 samples was taken")
	}
	if _, err := cl.Forward(ctx, dslide.ForwardRequest{Version: 1, N: 1, X: make([]float32, 3), Labels: [][]int32{{-1}}}); !errors.Is(err, dslide.ErrRound) {
		t.Fatalf("a negative label: %v", err)
	}
	if _, err := cl.Predict(ctx, dslide.PredictRequest{Version: 1, N: 1, K: 1 << 30, X: make([]float32, 3)}); !errors.Is(err, dslide.ErrRound) {
		t.Fatalf("predict k 2^30: %v", err)
	}
	checkPollOverGRPC(t, base, &sv, cl)
	sv.Set(o)
	w := &dslide.Worker{Part: part, Peers: []dslide.Peer{cl}, Version: 1}
	x, labels := batch(rand.New(rand.NewPCG(1, 2)), 3, 3, 10)
	if _, _, err := w.TrainBatch(ctx, x, 3, labels, nil, 0); err != nil {
		t.Fatal(err)
	}
	stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, _, err := w.TrainBatch(ctx, x, 3, labels, nil, 0); err == nil || ctx.Err() != nil {
		t.Fatalf("a stopped server: %v (context %v)", err, ctx.Err())
	}
}

// TestWireRoundTrip: every message decodes to what was encoded; a cut or
// extended buffer is an error.
func TestWireRoundTrip(t *testing.T) {
	msgs := []interface {
		MarshalBinary() ([]byte, error)
		UnmarshalBinary([]byte) error
	}{
		&fwdReq{Version: 3, Round: 9, Worker: 1, N: 2, X: []float32{1, 2, 3, 4}, Labels: [][]int32{{5}, {}}, Pause: 12, Dense: true, Wait: time.Second},
		&fwdRep{Parts: []slide.Partial{{Max: 1, Sum: 2, Labels: 3, LabelLogits: 4}}, Logits: []float32{1, -2}, Info: dslide.RoundInfo{Pause: 3, Samples: 7, WithLabels: 6}, Active: 9},
		&backReq{Version: 1, Round: 2, Worker: 3, Globals: []slide.Global{{Max: -1, Sum: 0.5, Labels: 2}}, Poll: true, Wait: 5},
		&backRep{Dx: []float32{0.25, -1}},
		&predReq{Version: 4, N: 1, K: 2, X: []float32{1, 2, 3}, Sparse: true, Rehash: true},
		&predRep{Pending: true, IDs: []int32{-1, 7}, Scores: []float32{0, 3}},
	}
	for _, m := range msgs {
		b, _ := m.MarshalBinary()
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface().(interface{ UnmarshalBinary([]byte) error })
		if err := got.UnmarshalBinary(b); err != nil || !reflect.DeepEqual(normalize(got), normalize(m)) {
			t.Errorf("%T: round trip %+v (%v), want %+v", m, got, err, m)
		}
		if err := got.UnmarshalBinary(b[:len(b)-1]); err == nil {
			t.Errorf("%T: a cut buffer decoded", m)
		}
		if err := got.UnmarshalBinary(append(b, 0)); err == nil {
			t.Errorf("%T: a longer buffer decoded", m)
		}
	}
}

// normalize makes empty slices nil, as decoding gives empty ones.
func normalize(v any) any {
	b, _ := v.(interface{ MarshalBinary() ([]byte, error) }).MarshalBinary()
	return b
}

// FuzzWire: no input makes a decoder panic.
func FuzzWire(f *testing.F) {
	b, _ := (&fwdReq{N: 1, X: []float32{1}, Labels: [][]int32{{2}}}).MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []interface{ UnmarshalBinary([]byte) error }{&fwdReq{}, &fwdRep{}, &backReq{}, &backRep{}, &predReq{}, &predRep{}} {
			_ = m.UnmarshalBinary(b)
		}
	})
}

// checkPollOverGRPC: a contribution that waits for another worker comes
// back Pending and is polled again (a request with no data) over the
// wire; an owner closed while a request waits answers it Pending.
func checkPollOverGRPC(t *testing.T, base slide.Config, sv *Server, cl *Client) {
	t.Helper()
	ctx := context.Background()
	part, _ := dslide.Even(base.Dim, 1)
	o, err := dslide.NewOwner(base, part, 0, 2, 1) // 2 workers: worker 1 never comes
	if err != nil {
		t.Fatal(err)
	}
	sv.Set(o)
	x, labels := batch(rand.New(rand.NewPCG(3, 3)), 2, base.InputDim, base.Dim)
	rep, err := cl.Forward(ctx, dslide.ForwardRequest{Version: 1, N: 2, X: x, Labels: labels, Wait: time.Millisecond})
	if err != nil || !rep.Pending {
		t.Fatalf("a contribution waiting for worker 1: %+v, %v", rep, err)
	}
	poll := dslide.ForwardRequest{Version: 1, N: 2, Poll: true, Wait: time.Millisecond}
	if rep, err := cl.Forward(ctx, poll); err != nil || !rep.Pending {
		t.Fatalf("a poll: %+v, %v", rep, err)
	}
	done := make(chan error, 1)
	go func() {
		poll.Wait = time.Minute
		rep, err := cl.Forward(ctx, poll)
		if err == nil && !rep.Pending {
			err = fmt.Errorf("reply %+v", rep)
		}
		done <- err
	}()
	o.Close() // the poll waits at the owner or comes after: Pending either way
	if err := <-done; err != nil {
		t.Fatalf("a poll waiting when its owner closed: %v", err)
	}
}

// TestContributionBeforeOwner: a worker's contribution that reaches a
// process whose owner is not there yet is not taken (Resend): the worker
// sends it again, with its data, once the owner is, and the round ends.
func TestContributionBeforeOwner(t *testing.T) {
	base := slide.Config{Dim: 10, InputDim: 3, Sparsity: 1, Threads: 1, Seed: 1, LearningRate: 0.01}
	part, _ := dslide.Even(10, 1)
	var sv Server
	cl, _ := serve(t, &sv)
	o, err := dslide.NewOwner(base, part, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	waits := 0
	w := &dslide.Worker{Part: part, Peers: []dslide.Peer{cl}, Version: 1, Wait: time.Millisecond,
		Waiting: func(context.Context) error {
			if waits++; waits == 2 { // the owner comes after the worker asked twice
				sv.Set(o)
			}
			return nil
		}}
	x, labels := batch(rand.New(rand.NewPCG(1, 5)), 3, 3, 10)
	if _, _, err := w.TrainBatch(context.Background(), x, 3, labels, make([]float32, 9), 0); err != nil || waits < 2 {
		t.Fatalf("a round whose owner came late: %v after %d waits", err, waits)
	}
}
