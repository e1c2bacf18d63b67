package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// FuzzDecodeRequest: the strict request decoder never panics, accepts
// what its reference (decodeRequestReference, json.Decoder's tokens)
// accepts and nothing else, as the same request; what it accepts is what
// package json reads the same bytes as, with a candidates key and no
// null, duplicate or unknown key, and nothing after the object; its
// re-encoding decodes back to it.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"user": "0:u42 1:ios", "candidates": ["2:item7 3:cat1", "2:item9 3:cat4"]}`,
		`{"candidates": ["1:a"]}`, `{"user": null, "candidates": [null]}`, `{"user": "a", "user": "b", "candidates": []}`,
		`{"candidates": ["1:a"]} x`, `[]`, `{"candidates": {"a": 1}}`, `{"candidates": ["\u00e9:\ud83d\ude00"]}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRequest(bytes.NewReader(b), int64(len(b)))
		ref, rerr := decodeRequestReference(bytes.NewReader(b))
		if (err == nil) != (rerr == nil) || err == nil && !reflect.DeepEqual(req, ref) {
			t.Fatalf("%q: %+v, %v; the reference decodes %+v, %v", b, req, err, ref, rerr)
		}
		if err != nil {
			return
		}
		var loose Request
		if err := json.Unmarshal(b, &loose); err != nil {
			t.Fatalf("accepted %q, which package json refuses: %v", b, err)
		}
		if loose.User != req.User || len(loose.Candidates) != len(req.Candidates) {
			t.Fatalf("accepted %q as %+v; package json reads %+v", b, req, loose)
		}
		if req.Candidates == nil {
			req.Candidates = []string{} // "candidates": [] (json would write null, which is refused)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeRequest(bytes.NewReader(again), -1)
		if err != nil || !reflect.DeepEqual(back.Candidates, req.Candidates) && len(req.Candidates) > 0 || back.User != req.User {
			t.Fatalf("%q re-encoded as %s decodes to %+v, %v", b, again, back, err)
		}
	})
}

// BenchmarkDecodeRequest decodes a request of a user and 150 candidates
// of 10 features each (about 20 KB): the strict decoder's time and
// allocations, beside a Predict's (BenchmarkPredict), and the
// reference decoder's (json.Decoder's tokens) it replaced.
func BenchmarkDecodeRequest(b *testing.B) {
	req := Request{User: "0:u42 1:ios 2:beijing 3:m25"}
	for i := range 150 {
		var f []string
		for j := range 10 {
			f = append(f, fmt.Sprintf("%d:tok%d_%d", 4+j, i*7+j, j))
		}
		req.Candidates = append(req.Candidates, strings.Join(f, " "))
	}
	body, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func(io.Reader, int64) (*Request, error)
	}{{"ours", decodeRequest}, {"reference", func(r io.Reader, _ int64) (*Request, error) { return decodeRequestReference(r) }}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(bytes.NewReader(body), int64(len(body))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestBlocksOnlyOnIdleCores: a request is split into as many blocks as
// its candidates make of SplitCandidates, at most one more than the cores
// the requests in flight leave idle (a direct call counting as one).
func TestBlocksOnlyOnIdleCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	s := &Server{opts: Options{SplitCandidates: 32}, inFlight: make(chan struct{}, 8), small: make(chan struct{}, 2)}
	for _, c := range []struct{ n, inFlight, small, want int }{
		{150, 0, 0, 4}, // a direct call, every core idle: 4 blocks' worth
		{150, 1, 0, 4},
		{150, 2, 0, 3},
		{150, 3, 1, 1}, // every core has a request
		{150, 8, 2, 1},
		{40, 1, 0, 1}, // too few candidates for two blocks
		{64, 1, 0, 2},
	} {
		for range c.inFlight {
			s.inFlight <- struct{}{}
		}
		for range c.small {
			s.small <- struct{}{}
		}
		if got := s.blocks(c.n); got != c.want {
			t.Errorf("%d candidates, %d+%d in flight: %d blocks, want %d", c.n, c.inFlight, c.small, got, c.want)
		}
		for len(s.inFlight) > 0 {
			<-s.inFlight
		}
		for len(s.small) > 0 {
			<-s.small
		}
	}
	s.opts.SplitCandidates = -1
	if got := s.blocks(4096); got != 1 {
		t.Errorf("SplitCandidates -1: %d blocks", got)
	}
}
