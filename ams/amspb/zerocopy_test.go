package amspb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

func big(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

// The hand encodings must be the protobuf encoding: decoding them gives the
// message back, and they equal proto.Marshal's deterministic output.
func TestZeroCopyEncodings(t *testing.T) {
	msgs := []proto.Message{
		&PullResponse{},
		&PullResponse{Tables: []*TableRows{{Table: "emb", Rows: big(100, 1)}, {Table: "", Rows: nil}, {Table: "u", Rows: big(70000, 3)}},
			Dense: []*DenseValues{{Name: "mlp", Lo: 0, Hi: 5, Values: big(20, 9)}, {Name: "mlp2", Lo: 7, Hi: 1 << 40, Values: big(bulkMin, 2)}}},
		&PushRequest{},
		&PushRequest{ClusterVersion: 3, Tables: []*TableGrads{{Table: "emb", Ids: big(8*600, 4), Grads: big(4*600*16, 5)}, {Table: "x"}},
			Dense: []*DenseGrad{{Name: "mlp", Grad: big(400000, 6)}, {Name: "", Grad: big(3, 7)}}},
		&PullResponse{RoundPending: true},
		&PushRequest{ClusterVersion: 4, Tables: []*TableGrads{{Table: "emb", Ids: big(8, 1), Grads: big(4, 2)}},
			Sync:  &SyncRound{Epoch: 2, Iter: 1 << 20, Worker: 1, Workers: 3, Done: true},
			State: []*StateEntry{{Key: "reader/w/checkpoint", Value: big(50, 3)}, {Key: "k", Value: big(bulkMin+1, 4)}}},
		&PushRequest{Sync: &SyncRound{}},
		&PushRequest{ClusterVersion: 5, Dense: []*DenseGrad{{Name: "mlp", Grad: big(40, 6)}},
			Origin: &Origin{Worker: "worker-1", Batch: 1 << 40, Samples: 256, Digest: 1<<64 - 1}},
		&PushRequest{Origin: &Origin{}},
	}
	c := Codec{Pool: &BufferPool{}}
	for i, m := range msgs {
		data, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got := data.Materialize()
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("message %d: hand encoding differs from proto.Marshal (%d vs %d bytes)", i, len(got), len(want))
		}
		back := m.ProtoReflect().New().Interface()
		if err := c.Unmarshal(data, back); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(back, m) {
			t.Fatalf("message %d: decoded %v, want %v", i, back, m)
		}
	}
}
