package amspb

import (
	"bytes"
	"slices"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
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

// TestPullReplyDecodes: the Codec's PullReply decoding gives what
// proto.Unmarshal gives, from the hand encoding and from proto.Marshal's,
// skips fields it does not know (or of another wire type), refuses a
// truncated message, and Release empties the reply.
func TestPullReplyDecodes(t *testing.T) {
	msgs := []*PullResponse{
		{},
		{RoundPending: true},
		{Tables: []*TableRows{{Table: "emb", Rows: big(100, 1)}, {}, {Table: "u", Rows: big(70000, 3)}},
			Dense: []*DenseValues{{Name: "mlp", Lo: 0, Hi: 5, Values: big(20, 9)}, {Name: "mlp2", Lo: 7, Hi: 1 << 40, Values: big(bulkMin, 2)}}},
		{Dense: []*DenseValues{{}}},
	}
	c := Codec{Pool: &BufferPool{}}
	var r PullReply
	for i, m := range msgs {
		wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// unknown fields: a varint 9, a fixed64 10, bytes 11, and field 3
		// with the bytes wire type, at the top and in a table's message
		extra := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 5)
		extra = protowire.AppendFixed64(protowire.AppendTag(extra, 10, protowire.Fixed64Type), 6)
		extra = protowire.AppendBytes(protowire.AppendTag(extra, 11, protowire.BytesType), []byte("x"))
		extra = protowire.AppendBytes(protowire.AppendTag(extra, 3, protowire.BytesType), []byte("y"))
		withUnknown := append(slices.Clone(extra), wire...)
		withUnknown = protowire.AppendBytes(protowire.AppendTag(withUnknown, 1, protowire.BytesType), append(slices.Clone(extra), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("late"))...))
		wantUnknown := proto.Clone(m).(*PullResponse)
		wantUnknown.Tables = append(wantUnknown.Tables, &TableRows{Table: "late"})
		hand, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range []struct {
			what string
			data mem.BufferSlice
			want *PullResponse
		}{{"hand", hand, m}, {"proto", mem.BufferSlice{mem.SliceBuffer(wire)}, m}, {"unknown fields", mem.BufferSlice{mem.SliceBuffer(withUnknown)}, wantUnknown}} {
			if err := c.Unmarshal(in.data, &r); err != nil {
				t.Fatalf("message %d, %s: %v", i, in.what, err)
			}
			var ref PullResponse
			if err := proto.Unmarshal(in.data.Materialize(), &ref); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&r.Resp, in.want) || !equalKnown(&ref, in.want) {
				t.Fatalf("message %d, %s: decoded %v, want %v", i, in.what, &r.Resp, in.want)
			}
		}
		if len(wire) > 1 {
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:len(wire)-1])}, &r); err == nil {
				t.Fatalf("message %d: a truncated message decoded", i)
			}
		}
	}
	r.Release()
	if r.buf != nil || r.Resp.Tables != nil || r.Resp.Dense != nil || r.Resp.RoundPending {
		t.Fatal("Release left the reply set")
	}
}

// equalKnown compares a and b without their unknown fields.
func equalKnown(a, b *PullResponse) bool {
	a = proto.Clone(a).(*PullResponse)
	a.ProtoReflect().SetUnknown(nil)
	for _, t := range a.Tables {
		t.ProtoReflect().SetUnknown(nil)
	}
	return proto.Equal(a, b)
}
