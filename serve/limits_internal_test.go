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
	"time"

	"github.com/xdlgo/xps/tests/testutil"
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

// TestCoresSplitOnlyIdleOnes: a request takes a place of its own and as
// many idle ones as its candidates make blocks of SplitCandidates, never
// more than GOMAXPROCS in all; one that finds none waits for one.
func TestCoresSplitOnlyIdleOnes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	c := newCores()
	for _, s := range []struct{ n, min, want, busy int }{
		{150, -1, 1, 1},  // never splits
		{150, 200, 1, 2}, // too few candidates for two blocks
		{150, 32, 2, 4},  // 4 blocks' worth, 2 places idle
	} {
		if got := c.take(s.n, s.min); got != s.want || len(c.places) != s.busy {
			t.Fatalf("take(%d, %d): %d blocks, %d busy; want %d, %d", s.n, s.min, got, len(c.places), s.want, s.busy)
		}
	}
	took := make(chan int)
	go func() { took <- c.take(4096, 1) }()
	testutil.Eventually(t, time.Minute, "a request waiting for a place", func() bool { return c.queued.Load() == 1 })
	select {
	case n := <-took:
		t.Fatalf("a request took %d places with none free", n)
	default:
	}
	c.give(3)
	if got := <-took; got != 3 {
		t.Fatalf("the waiting request took %d places, want its own and the 2 idle ones", got)
	}
	c.give(4)
	if len(c.places) != 0 || c.queued.Load() != 0 {
		t.Fatalf("%d places busy, %d queued after every one was given back", len(c.places), c.queued.Load())
	}
}
