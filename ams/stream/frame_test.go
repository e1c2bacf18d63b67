package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/xdlgo/xps/ams"
)

// request builds a request frame of h with the given tables (ids, and a
// push's gradients of dim dims[i]) and dense values.
func request(t testing.TB, h RequestHeader, names []string, ids [][]uint64, dims []int, grads [][]float32, dense []string, values [][]float32) []byte {
	t.Helper()
	tm := make([]TableMeta, len(names))
	for i := range names {
		tm[i] = TableMeta{Name: names[i], IDs: len(ids[i]), Dim: dims[i]}
	}
	dm := make([]DenseMeta, len(dense))
	for j := range dense {
		dm[j] = DenseMeta{Name: dense[j], Values: len(values[j])}
	}
	b := make([]byte, RequestSize(&h, tm, dm))
	var w RequestWriter
	if err := w.Begin(b, &h, tm, dm); err != nil {
		t.Fatal(err)
	}
	for i := range names {
		ams.PutFloats(w.Table(ids[i], dims[i]), grads[i])
	}
	for j := range dense {
		ams.PutFloats(w.Dense(len(values[j])), values[j])
	}
	if w.off != len(b) {
		t.Fatalf("wrote %d of %d bytes", w.off, len(b))
	}
	return b
}

func TestRequestRoundTrip(t *testing.T) {
	h := RequestHeader{Kind: KindPush, ID: 7, Version: 3,
		Origin: ams.Origin{Worker: "worker-1", Batch: 42, Samples: 256, Digest: 0xfeed}}
	ids := [][]uint64{{1, 2, 3}, {9}, {}}
	grads := [][]float32{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {0.5, 0.25, 0.125}, {}}
	values := [][]float32{{1, 2, 3}, {4}}
	frame := request(t, h, []string{"emb", "wide", "e"}, ids, []int{3, 3, 5}, grads, []string{"mlp", "b"}, values)
	if len(frame)%8 != 0 {
		t.Fatalf("a frame of %d bytes, not a multiple of 8", len(frame))
	}
	var q Request
	if err := ParseRequest(frame, &q, Names{}); err != nil {
		t.Fatal(err)
	}
	if q.RequestHeader != h {
		t.Fatalf("header %+v, want %+v", q.RequestHeader, h)
	}
	for i, tr := range q.Tables {
		if !reflect.DeepEqual(tr.IDs, ids[i]) && len(ids[i])+len(tr.IDs) > 0 {
			t.Fatalf("table %d ids %v, want %v", i, tr.IDs, ids[i])
		}
		if !reflect.DeepEqual(tr.Rows, grads[i]) && len(grads[i])+len(tr.Rows) > 0 {
			t.Fatalf("table %d grads %v, want %v", i, tr.Rows, grads[i])
		}
	}
	if q.Tables[0].Table != "emb" || q.Tables[1].Table != "wide" || q.Dense[1].Name != "b" || !reflect.DeepEqual(q.Dense[0].Values, values[0]) {
		t.Fatalf("request %+v", q)
	}
	// A pull carries neither gradients nor dense values.
	p := request(t, RequestHeader{Kind: KindPull, ID: 8, Version: 3, Create: true}, []string{"emb"}, ids[:1], []int{0}, [][]float32{nil}, []string{"mlp"}, [][]float32{nil})
	if err := ParseRequest(p, &q, Names{}); err != nil || !q.Create || q.Kind != KindPull || len(q.Tables[0].Rows) != 0 || q.Dense[0].Values != nil {
		t.Fatalf("pull %+v: %v", q, err)
	}
}

func TestReplyRoundTrip(t *testing.T) {
	values := []int{6, 0, 2}
	ranges := []Range{{Lo: 10, Hi: 13}, {Lo: 0, Hi: 0}}
	b := make([]byte, ReplySize(values, ranges, 0))
	rows, dense := make([][]byte, 3), make([][]byte, 2)
	WriteReply(b, 99, values, ranges, nil, rows, dense)
	for i := range rows {
		for k := range rows[i] {
			rows[i][k] = byte(i + k)
		}
	}
	copy(dense[0], bytes.Repeat([]byte{7}, 12))
	var r Reply
	if err := ParseReply(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.ID != 99 || r.Err != nil || len(r.Rows) != 3 || len(r.Rows[0]) != 24 || r.Rows[2][3] != 5 || !reflect.DeepEqual(r.Ranges, ranges) || r.Dense[0][11] != 7 {
		t.Fatalf("reply %+v", r)
	}
	eb := []byte("status bytes")
	b = make([]byte, ReplySize(nil, nil, len(eb)))
	WriteReply(b, 5, nil, nil, eb, nil, nil)
	if err := ParseReply(b, &r); err != nil || r.ID != 5 || !bytes.Equal(r.Err, eb) {
		t.Fatalf("error reply %+v: %v", r, err)
	}
}

// TestMalformedFrames: every truncation of a good frame, and frames whose
// counts lie, fail with an error that wraps ams.ErrBadRequest (requests)
// or a plain error (replies), never a panic (invariant 1).
func TestMalformedFrames(t *testing.T) {
	frame := request(t, RequestHeader{Kind: KindPush, ID: 1, Version: 1, Origin: ams.Origin{Worker: "w"}},
		[]string{"emb"}, [][]uint64{{1, 2}}, []int{2}, [][]float32{{1, 2, 3, 4}}, []string{"d"}, [][]float32{{5}})
	var q Request
	for n := range len(frame) {
		if err := ParseRequest(frame[:n], &q, Names{}); !errors.Is(err, ams.ErrBadRequest) {
			t.Fatalf("a request cut at %d of %d bytes: %v", n, len(frame), err)
		}
	}
	lie := bytes.Clone(frame)
	binary.LittleEndian.PutUint16(lie[2:], 200) // 200 tables
	if err := ParseRequest(lie, &q, Names{}); !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("a request claiming 200 tables: %v", err)
	}
	long := append(bytes.Clone(frame), make([]byte, 8)...)
	if err := ParseRequest(long, &q, Names{}); !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("a request with bytes after it: %v", err)
	}
	b := make([]byte, ReplySize([]int{4}, []Range{{1, 3}}, 0))
	WriteReply(b, 1, []int{4}, []Range{{1, 3}}, nil, make([][]byte, 1), make([][]byte, 1))
	var r Reply
	for n := range len(b) {
		if err := ParseReply(b[:n], &r); err == nil {
			t.Fatalf("a reply cut at %d of %d bytes parsed", n, len(b))
		}
	}
	if _, err := ParseHello(frame); err == nil {
		t.Fatal("a push parsed as a hello")
	}
	if v, err := ParseHello(Hello()); err != nil || v != ProtocolVersion {
		t.Fatalf("hello: %d, %v", v, err)
	}
}

// FuzzRequest: ParseRequest never panics, and whatever it accepts has
// every payload inside the frame (invariant 1).
func FuzzRequest(f *testing.F) {
	f.Add(request(f, RequestHeader{Kind: KindPush, ID: 1, Version: 1, Origin: ams.Origin{Worker: "w", Batch: 3}},
		[]string{"emb", "x"}, [][]uint64{{1, 2}, {3}}, []int{2, 1}, [][]float32{{1, 2, 3, 4}, {5}}, []string{"d"}, [][]float32{{5}}))
	f.Add(request(f, RequestHeader{Kind: KindPull, ID: 2, Version: 1}, []string{"emb"}, [][]uint64{{1}}, []int{0}, [][]float32{nil}, nil, nil))
	f.Add(Hello())
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Request
		if err := ParseRequest(b, &q, Names{}); err != nil {
			return
		}
		n := 0
		for i, tr := range q.Tables {
			n += 8*len(tr.IDs) + 4*len(tr.Rows)
			if q.Kind == KindPush && len(tr.Rows) != len(tr.IDs)*q.Dims[i] {
				t.Fatalf("table %d: %d gradients for %d ids of dim %d", i, len(tr.Rows), len(tr.IDs), q.Dims[i])
			}
		}
		for _, d := range q.Dense {
			n += 4 * len(d.Values)
		}
		if n > len(b) {
			t.Fatalf("payloads of %d bytes in a frame of %d", n, len(b))
		}
	})
}

// FuzzReply: ParseReply never panics, and what it accepts fits the frame.
func FuzzReply(f *testing.F) {
	b := make([]byte, ReplySize([]int{4, 2}, []Range{{1, 3}}, 0))
	WriteReply(b, 1, []int{4, 2}, []Range{{1, 3}}, nil, make([][]byte, 2), make([][]byte, 1))
	f.Add(b)
	e := make([]byte, ReplySize(nil, nil, 3))
	WriteReply(e, 2, nil, nil, []byte("err"), nil, nil)
	f.Add(e)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reply
		if err := ParseReply(b, &r); err != nil {
			return
		}
		n := len(r.Err)
		for _, x := range r.Rows {
			n += len(x)
		}
		for j, x := range r.Dense {
			n += len(x)
			if len(x) != 4*(r.Ranges[j].Hi-r.Ranges[j].Lo) {
				t.Fatalf("vector %d: %d bytes for range %+v", j, len(x), r.Ranges[j])
			}
		}
		if n > len(b) {
			t.Fatalf("payloads of %d bytes in a frame of %d", n, len(b))
		}
	})
}
