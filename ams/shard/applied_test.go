package shard

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// TestPushOfABatchAppliedOnce pushes batches of a worker through both data
// planes (the service's messages and Local's buffers): a batch pushed
// again is refused on either and changes no row, a batch that fails
// another check is not recorded, the records count samples and digests,
// and a begin empties them.
func TestPushOfABatchAppliedOnce(t *testing.T) {
	s := New(Options{ID: "t", Stripes: 3})
	defer s.Close()
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, []DenseDecl{{Spec: ams.DenseSpec{Name: "d", Size: 2, Optimizer: spec.Optimizer}, Lo: 0, Hi: 2, Init: []float32{0, 0}}}); err != nil {
		t.Fatal(err)
	}
	ctx, l, svc := context.Background(), NewLocal(s), NewService(s)
	origin := func(b uint64) ams.Origin { return ams.Origin{Worker: "w", Batch: b, Samples: 10, Digest: b} }
	viaLocal := func(b uint64) error {
		return l.PushRows(ctx, 1, origin(b), []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: []float32{1, 1}}},
			[]ams.DenseRequest{{Name: "d", Values: []float32{1, 1}}})
	}
	viaService := func(b uint64) error {
		_, err := svc.Push(ctx, &amspb.PushRequest{ClusterVersion: 1, Origin: amspb.FromOrigin(origin(b)),
			Tables: []*amspb.TableGrads{{Table: "emb", Ids: ams.IDsPayload([]uint64{7}), Grads: ams.FloatsPayload([]float32{1, 1})}},
			Dense:  []*amspb.DenseGrad{{Name: "d", Grad: ams.FloatsPayload([]float32{1, 1})}}})
		return err
	}
	for b, push := range []func(uint64) error{viaLocal, viaService, viaLocal} {
		if err := push(uint64(b)); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
	}
	row := func() []float32 {
		out := make([]float32, 2)
		if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: out}}, false); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := row()
	for _, push := range []func(uint64) error{viaLocal, viaService} {
		if err := push(1); !errors.Is(err, ams.ErrDuplicatePush) {
			t.Fatalf("batch 1 again = %v, want ams.ErrDuplicatePush", err)
		}
	}
	if got := row(); !slices.Equal(got, before) {
		t.Fatalf("a refused batch changed the row: %v, was %v", got, before)
	}
	_, _, dense, _ := s.PullDense(1, "d")
	if !slices.Equal(dense, []float32{-3, -3}) {
		t.Fatalf("dense after 3 batches = %v, want [-3 -3]", dense)
	}
	// A push refused by another check (an unknown table) is not recorded:
	// its batch may be pushed once fixed.
	if err := l.PushRows(ctx, 1, origin(3), []ams.TableRequest{{Table: "nope", IDs: []uint64{1}, Rows: []float32{1, 1}}}, nil); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("unknown table = %v", err)
	}
	if err := l.PushRows(ctx, 2, origin(3), nil, nil); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale push = %v", err)
	}
	a := s.Applied()["w"]
	if a == nil || !a.Exactly(3) || a.Samples != 30 || a.Digest != 3 || a.Refused != 2 {
		t.Fatalf("record = %+v, want batches [0,3) of 30 samples, digest 3, 2 refused", a)
	}
	if err := viaService(3); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(2, 0); err != nil {
		t.Fatal(err)
	}
	if len(s.Applied()) != 0 {
		t.Fatalf("records after a begin: %v", s.Applied())
	}
}
