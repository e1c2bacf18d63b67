package amspb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

// A PooledReply encodes as its PullResponse, and its pool's buffers go back
// to the pool when gRPC frees the encoded message, not before: a buffer too
// small to be sent without a copy, one that is not the rows' own and a nil
// one are left alone.
func TestPooledReplyGivesBuffersBackWhenFreed(t *testing.T) {
	p := &BufferPool{}
	fill := func(n int, seed byte) *[]byte {
		b := p.Get(n)
		copy(*b, big(n, seed))
		return b
	}
	large, small, other := fill(70000, 1), fill(100, 2), fill(bulkMin, 3)
	r := &PooledReply{Pool: p, Rows: []*[]byte{large, small, other, nil}, Resp: PullResponse{
		Tables: []*TableRows{{Table: "emb", Rows: *large}, {Table: "u", Rows: *small},
			{Table: "v", Rows: big(bulkMin, 3)}, {Table: "w", Rows: big(bulkMin, 4)}},
		Dense: []*DenseValues{{Name: "mlp", Hi: 2, Values: big(8, 5)}}}}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&r.Resp)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Codec{Pool: p}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := data.Materialize(); !bytes.Equal(got, want) {
		t.Fatalf("pooled reply encodes as %d bytes unlike its response's %d", len(got), len(want))
	}
	if k := p.kept.Load(); k != 0 {
		t.Fatalf("the pool keeps %d bytes before the message is freed, want 0", k)
	}
	data.Free()
	if k, want := p.kept.Load(), int64(cap(*large)); k != want {
		t.Fatalf("the pool keeps %d bytes after the message is freed, want %d (the large rows' buffer only)", k, want)
	}
	if b := p.Get(70000); &(*b)[0] != &(*large)[0] {
		t.Fatal("the next Get of the same size did not reuse the freed rows' buffer")
	}
}

// Release gives back every buffer of a reply that is not sent.
func TestPooledReplyRelease(t *testing.T) {
	p := &BufferPool{}
	a, b := p.Get(5000), p.Get(9000)
	r := &PooledReply{Pool: p, Rows: []*[]byte{a, nil, b}}
	r.Release()
	if k, want := p.kept.Load(), int64(cap(*a)+cap(*b)); k != want {
		t.Fatalf("the pool keeps %d bytes after Release, want %d", k, want)
	}
	r.Release() // a second Release puts nothing twice
	if k, want := p.kept.Load(), int64(cap(*a)+cap(*b)); k != want {
		t.Fatalf("the pool keeps %d bytes after a second Release, want %d", k, want)
	}
}

func TestPooledReplyReleaseWithoutPool(t *testing.T) {
	b := make([]byte, 10)
	(&PooledReply{Rows: []*[]byte{&b}}).Release()
}
