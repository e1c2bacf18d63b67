package amspb

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdlgo/xps/ams"
)

// FuzzCodec feeds arbitrary bytes to the hand-written parts of the AMS
// wire format, each checked against package proto as the reference:
//
//   - the PullReply decoder (unmarshalPullResponse) accepts what
//     proto.Unmarshal accepts, with the same known fields; it may accept
//     more only where a string is not UTF-8 (proto3 refuses those, the
//     hand decoder leaves the check to whoever reads the name), also one
//     that a later occurrence of its field replaced (proto3 checks every
//     occurrence; the fuzzer found such a table name);
//   - the hand encodings of a pull reply and a push request
//     (marshalPullResponse, marshalPushRequest) of any message
//     proto.Unmarshal reads are proto.Marshal's deterministic bytes, and
//     decode back to the message;
//   - the applied-ranges payload (ToApplied) is accepted only in strictly
//     increasing, disjoint ranges, and FromApplied encodes it back to the
//     same bytes;
//   - a wire table spec (a Declare) converts to the same Go spec after a
//     trip through the wire form (ToTableSpec is a normalisation).
func FuzzCodec(f *testing.F) {
	c := Codec{Pool: &BufferPool{}}
	for _, m := range []proto.Message{
		&PullResponse{Tables: []*TableRows{{Table: "emb", Rows: big(64, 1)}, {Table: "u"}},
			Dense: []*DenseValues{{Name: "mlp", Lo: 0, Hi: 5, Values: big(20, 9)}}},
		&PullResponse{RoundPending: true},
		&PushRequest{ClusterVersion: 4, Tables: []*TableGrads{{Table: "emb", Ids: big(16, 1), Grads: big(8, 2)}},
			Dense:  []*DenseGrad{{Name: "mlp", Grad: big(12, 6)}},
			Sync:   &SyncRound{Epoch: 2, Iter: 7, Worker: 1, Workers: 3, Done: true},
			State:  []*StateEntry{{Key: "reader/w/checkpoint", Value: []byte(`{"epoch":1}`)}},
			Origin: &Origin{Worker: "worker-1", Batch: 1 << 40, Samples: 256, Digest: 1<<64 - 1}},
		FromTableSpec(ams.TableSpec{Name: "emb", Dim: 8, Optimizer: ams.OptimizerSpec{Name: "adam", LR: 0.01},
			Init: ams.InitSpec{Kind: "normal", Scale: 0.1, Seed: 3}}),
		FromApplied("worker-0", &ams.Applied{Ranges: []ams.BatchRange{{Lo: 0, Hi: 4}, {Lo: 6, Hi: 9}}, Samples: 90}),
	} {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x03, 0x0a, 0x01, 0xff}) // a table named "\xff"
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x01})       // cut short
	f.Fuzz(func(t *testing.T, b []byte) {
		checkPullReply(t, c, b)
		checkPushRequest(t, b)
		checkApplied(t, b)
		checkTableSpec(t, b)
	})
}

func checkPullReply(t *testing.T, c Codec, b []byte) {
	var r PullReply
	herr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &r)
	defer r.Release()
	var ref PullResponse
	perr := proto.Unmarshal(b, &ref)
	switch {
	case perr == nil && herr != nil:
		t.Fatalf("proto.Unmarshal reads %x, the PullReply decoder refuses it: %v", b, herr)
	case perr != nil && herr == nil && !strings.Contains(perr.Error(), "invalid UTF-8"):
		t.Fatalf("the PullReply decoder reads %x, which proto.Unmarshal refuses: %v", b, perr)
	case perr != nil || herr != nil:
		return
	}
	dropUnknown(ref.ProtoReflect())
	if !proto.Equal(&ref, &r.Resp) {
		t.Fatalf("%x: the PullReply decoder reads %v, proto.Unmarshal %v", b, &r.Resp, &ref)
	}
	// Encoded by hand, it is proto.Marshal's encoding of the known fields,
	// and decodes back.
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&ref)
	if err != nil {
		t.Fatal(err)
	}
	hand := marshalPullResponse(&r.Resp, nil, nil)
	if got := hand.Materialize(); !bytes.Equal(got, want) {
		t.Fatalf("%x: the hand encoding of %v is %x, proto.Marshal's %x", b, &ref, got, want)
	}
	var back PullReply
	defer back.Release()
	if err := c.Unmarshal(hand, &back); err != nil || !proto.Equal(&back.Resp, &ref) {
		t.Fatalf("%x: the hand encoding decodes to %v, %v; want %v", b, &back.Resp, err, &ref)
	}
}

func checkPushRequest(t *testing.T, b []byte) {
	var m PushRequest
	if proto.Unmarshal(b, &m) != nil {
		return
	}
	dropUnknown(m.ProtoReflect())
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	got := marshalPushRequest(&m).Materialize()
	if !bytes.Equal(got, want) {
		t.Fatalf("%x: the hand encoding of %v is %x, proto.Marshal's %x", b, &m, got, want)
	}
	var back PushRequest
	if err := proto.Unmarshal(got, &back); err != nil || !proto.Equal(&back, &m) {
		t.Fatalf("%x: the hand encoding decodes to %v, %v; want %v", b, &back, err, &m)
	}
}

func checkApplied(t *testing.T, b []byte) {
	p := &Applied{Worker: "w", Ranges: b, Samples: 3, Digest: 4, Refused: 5}
	a, err := ToApplied(p)
	if err != nil {
		if !errors.Is(err, ams.ErrBadRequest) {
			t.Fatalf("ToApplied(%x) = %v, not ErrBadRequest", b, err)
		}
		return
	}
	for i, r := range a.Ranges {
		if r.Lo >= r.Hi || i > 0 && a.Ranges[i-1].Hi >= r.Lo {
			t.Fatalf("ToApplied(%x) took ranges %v", b, a.Ranges)
		}
	}
	back := FromApplied("w", a)
	if !bytes.Equal(back.Ranges, b) || back.Samples != 3 || back.Digest != 4 || back.Refused != 5 {
		t.Fatalf("ToApplied(%x) = %v, encoded back as %v", b, a, back)
	}
}

func checkTableSpec(t *testing.T, b []byte) {
	var p TableSpec
	if proto.Unmarshal(b, &p) != nil {
		return
	}
	s := ToTableSpec(&p)
	// Compared as printed: a float field may be NaN (%v prints every NaN
	// alike; == never holds for one).
	if again := ToTableSpec(FromTableSpec(s)); fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", s) {
		t.Fatalf("%x: table spec %+v comes back from the wire as %+v", b, s, again)
	}
}

// dropUnknown removes the unknown fields of m and of every message in it:
// the hand encoders write known fields only.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			dropUnknown(v.Message())
		}
		return true
	})
}
