package shard

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// FuzzService feeds arbitrary payloads to the gRPC handlers, as a broken or
// hostile client could: they must answer with an error or a well-formed
// reply, never panic, and a push must apply only what it fully accepted.
func FuzzService(f *testing.F) {
	ids := binary.LittleEndian.AppendUint64(nil, 7)
	f.Add(ids, make([]byte, 8), "emb", "mlp", uint64(1), true)
	f.Add(ids[:5], []byte{1, 2, 3}, "nope", "nope", uint64(2), false)
	f.Add([]byte{}, []byte{}, "emb", "", uint64(1), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, ids, payload []byte, table, dense string, version uint64, create bool) {
		s := New(Options{Stripes: 2, Stores: []string{dir}})
		defer s.Close()
		if _, err := s.Declare(1, []ams.TableSpec{{Name: "emb", Dim: 2}},
			[]DenseDecl{{Spec: ams.DenseSpec{Name: "mlp", Size: 3}, Lo: 0, Hi: 3, Init: []float32{1, 2, 3}}}); err != nil {
			t.Fatal(err)
		}
		v := &service{s: s}
		ctx := context.Background()
		pull, err := v.Pull(ctx, &amspb.PullRequest{ClusterVersion: version, Create: create,
			Tables: []*amspb.TableIDs{{Table: table, Ids: ids}}, Dense: []string{dense}})
		if err == nil {
			if len(pull.Tables) != 1 || len(pull.Tables[0].Rows) != len(ids)/8*2*4 || len(pull.Dense) != 1 {
				t.Fatalf("malformed pull reply for %d id bytes: %v", len(ids), pull)
			}
		}
		before, _ := s.Stats()
		_, err = v.Push(ctx, &amspb.PushRequest{ClusterVersion: version,
			Tables: []*amspb.TableGrads{{Table: table, Ids: ids, Grads: payload}},
			Dense:  []*amspb.DenseGrad{{Name: dense, Grad: payload}}})
		after, _ := s.Stats()
		if err != nil && after.Pushes != before.Pushes {
			t.Fatalf("a refused push was applied: %v", err)
		}
		// State: a refused put stores nothing; a stored value reads back.
		_, err = v.PutState(ctx, &amspb.PutStateRequest{ClusterVersion: version,
			Entries: []*amspb.StateEntry{{Key: table, Value: payload}, {Key: dense, Value: ids}}})
		got, gerr := v.GetState(ctx, &amspb.GetStateRequest{ClusterVersion: 1})
		if gerr != nil {
			t.Fatal(gerr)
		}
		if err != nil && len(got.Entries) != 0 {
			t.Fatalf("a refused put stored %d entries: %v", len(got.Entries), err)
		}
		if err == nil && table != dense && len(payload) > 0 {
			found := false
			for _, e := range got.Entries {
				found = found || (e.Key == table && string(e.Value) == string(payload))
			}
			if !found {
				t.Fatalf("stored state %q does not read back: %v", table, got.Entries)
			}
		}
		// Snapshots: a bad shard map, index or snapshot number is an error.
		_, _ = v.Restore(ctx, &amspb.RestoreRequest{ClusterVersion: version, Store: dir, Seq: version,
			ShardMap: payload, Index: uint32(len(ids))})
		if len(payload) < 64 { // keep the corpus of written snapshots small
			_, _ = v.WriteSnapshot(ctx, &amspb.WriteSnapshotRequest{ClusterVersion: version, Store: dir,
				Seq: uint64(len(payload)), Index: uint32(len(ids))})
		}
		_, _ = v.Declare(ctx, &amspb.DeclareRequest{ClusterVersion: version,
			Tables: []*amspb.TableSpec{{Name: table, Dim: uint32(len(payload))}},
			Dense:  []*amspb.DenseSpec{{Name: dense, Size: version, Lo: 0, Hi: uint64(len(payload) / 4), Init: payload}}})
	})
}
