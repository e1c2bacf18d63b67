package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/tests/testutil"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/serve/servepb"
	"github.com/xdlgo/xps/snapshot"
)

// post sends body to the server's /predict and returns the status and
// the answer.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url+"/predict", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostileRequests is issue 48's serving probe, case by case: strict
// JSON (nulls, duplicate keys, trailing bytes, unknown keys answered 200
// or silently before), the limits on a request's features and
// candidates (a request of 300,000 user features was scored, growing the
// server by tens of MB a request), a body announced at 64 MiB answered
// 413 at once without being read (it was read, then "unexpected EOF"),
// and a body that grows past the limit answered 413.
func TestHostileRequests(t *testing.T) {
	store, _, _ := trainAndExport(t, "libffm", export.FP32)
	s, err := serve.New(serve.Options{Store: store, Limits: serve.Limits{MaxBodyBytes: 1 << 20, MaxUserFeatures: 100, MaxCandidates: 50, MaxCandidateFeatures: 20, MaxFeatures: 300}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	if code, body := post(t, hs.URL, `{"user": "0:u1", "candidates": ["1:a 2:b", "1:c"]}`); code != 200 || !strings.Contains(body, `"scores":[`) {
		t.Fatalf("a good request: %d %s", code, body)
	}
	feats := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d:t%d ", i%20, i)
		}
		return b.String()
	}
	cands := func(n int, each string) string {
		return `["` + strings.TrimSuffix(strings.Repeat(each+`", "`, n), `", "`) + `"]`
	}
	for _, c := range []struct{ name, body, want string }{
		{"null user", `{"user": null, "candidates": ["1:a"]}`, "user: want a string, got null"},
		{"null candidate", `{"user": "0:u", "candidates": [null]}`, "candidates[0]: want a string, got null"},
		{"null candidates", `{"candidates": null}`, "candidates"},
		{"duplicate key", `{"user": "0:u", "user": "0:v", "candidates": ["1:a"]}`, `key "user" given twice`},
		{"trailing bytes", `{"user": "0:u", "candidates": ["1:a"]} {}`, "bytes after the request's object"},
		{"unknown key", `{"user": "0:u", "candidates": ["1:a"], "x": 1}`, `unknown key "x"`},
		{"no candidates key", `{"user": "0:u"}`, `no "candidates"`},
		{"not an object", `["1:a"]`, `want '{', got '['`},
		{"no candidates", `{"user": "0:u", "candidates": []}`, "0 candidates, want 1 to 50"},
		{"too many candidates", `{"candidates": ` + cands(51, "1:a") + `}`, "51 candidates, want 1 to 50"},
		{"too many user features", `{"user": "` + feats(101) + `", "candidates": ["1:a"]}`, "user: too many features: more than 100"},
		{"too many candidate features", `{"candidates": ["1:a", "` + feats(21) + `"]}`, "candidate 1: too many features: more than 20"},
		{"too many request features", `{"candidates": ` + cands(16, feats(20)) + `}`, "over MaxFeatures, 300"},
	} {
		code, body := post(t, hs.URL, c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", c.name, code, body, c.want)
		}
	}
	// A body over the limit, sent in chunks (no Content-Length): 413.
	big := `{"user": "` + strings.Repeat("0:u ", 300_000) + `", "candidates": ["1:a"]}`
	req, _ := http.NewRequest("POST", hs.URL+"/predict", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked body of %d bytes over the 1 MiB limit: %d, want 413", len(big), resp.StatusCode)
	}
	// A body announced at 64 MiB: 413 at once, none of it sent.
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	begun := time.Now()
	fmt.Fprintf(conn, "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 64<<20)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	ans, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a body announced at 64 MiB: no answer before any byte of it was sent: %v", err)
	}
	ans.Body.Close()
	if took := time.Since(begun); ans.StatusCode != http.StatusRequestEntityTooLarge || took > time.Second {
		t.Errorf("a body announced at 64 MiB: %d after %v, want 413 within 1s", ans.StatusCode, took)
	}
}

// TestInFlightBound: beyond MaxInFlight requests being read or scored, a
// request is refused at once, 503 with Retry-After over HTTP and
// RESOURCE_EXHAUSTED over gRPC, except a small one (a body announced at
// 64 KiB or less), which may take one of the places kept for small
// requests, so that large requests do not shut out the ordinary ones; a
// place is free again once its request ends.
func TestInFlightBound(t *testing.T) {
	store, _, _ := trainAndExport(t, "libffm", export.FP32)
	s, err := serve.New(serve.Options{Store: store, Limits: serve.Limits{MaxInFlight: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s.Handler())
	// Closed after the held connections (cleanups run last first): a
	// held request's handler may still be reading its body, which Close
	// would wait for.
	t.Cleanup(hs.Close)
	c := &flightClient{t: t, s: s, hs: hs}
	small := `{"user": "0:u1", "candidates": ["1:a"]}`
	large := "{" + strings.Repeat(" ", 70<<10) + small[1:] // valid JSON over 64 KiB
	endLarge := c.hold(large)
	c.places("the large request held", 1, 0)
	c.refused("a large request while a large one holds the only place", large)
	if code, _ := c.send(small); code != 200 {
		t.Errorf("a small request while a large one holds the only place: %d, want 200 (a place kept for small ones)", code)
	}
	c.places("the small request's place given back", 1, 0)
	end1 := c.hold(small)
	c.places("one small request held", 1, 1)
	end2 := c.hold(small)
	c.places("two small requests held", 1, 2)
	c.refused("a small request while every place is held", small)
	gc := grpcClient(t, s)
	if _, err := gc.Predict(context.Background(), &servepb.PredictRequest{User: "0:u1", Candidates: []string{"1:a"}}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("gRPC while overloaded: %v, want RESOURCE_EXHAUSTED", err)
	}
	for i, end := range []func() int{endLarge, end1, end2} {
		if code := end(); code != 200 {
			t.Errorf("held request %d: %d, want 200", i, code)
		}
	}
	c.places("every place given back", 0, 0)
	if code, _ := c.send(large); code != 200 {
		t.Errorf("a large request once the places are free: %d", code)
	}
}

// flightClient sends TestInFlightBound's requests to s (served by hs).
type flightClient struct {
	t  *testing.T
	s  *serve.Server
	hs *httptest.Server
}

// hold sends body's headers and its first 10 bytes: its request holds a
// place (once its handler runs: places) until finish sends the rest and
// reads the answer.
func (c *flightClient) hold(body string) (finish func() int) {
	conn, err := net.Dial("tcp", c.hs.Listener.Addr().String())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	return func() int {
		fmt.Fprint(conn, body[10:])
		ans, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			c.t.Fatal(err)
		}
		ans.Body.Close()
		return ans.StatusCode
	}
}

// send posts body and returns the answer's status and Retry-After.
func (c *flightClient) send(body string) (int, string) {
	resp, err := http.Post(c.hs.URL+"/predict", "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// refused sends body and wants it refused: 503 with Retry-After.
func (c *flightClient) refused(what, body string) {
	c.t.Helper()
	if code, retry := c.send(body); code != http.StatusServiceUnavailable || retry == "" {
		c.t.Errorf("%s: %d (Retry-After %q), want 503 with Retry-After", what, code, retry)
	}
}

// places waits until the places taken are general and small: a held
// request takes its place when its handler runs, and a finished one gives
// it back after its answer is sent.
func (c *flightClient) places(what string, general, small int) {
	c.t.Helper()
	testutil.Eventually(c.t, 30*time.Second, what, func() bool {
		g, sm := serve.Places(c.s)
		return g == general && sm == small
	})
}

// TestSaysWhyExportsAreUnusable is issue 48's probe of a store with only
// unusable exports: serve answered /healthz 503 and logged nothing, and
// called an export still being written corrupt. Now each unusable export
// is logged once, however often the store is read, with its reason; one
// being written (no manifest yet) is said as such, never as corrupt.
func TestSaysWhyExportsAreUnusable(t *testing.T) {
	dir, _, _ := trainAndExport(t, "libffm", export.FP32)
	store, err := snapshot.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	full, _, err := export.Next(store, nil)
	if err != nil || len(full) != 1 {
		t.Fatalf("the trainer's exports: %d, %v", len(full), err)
	}
	m := full[0]
	// The only full export damaged (its manifest cut short), and a newer
	// export being written (its directory without a manifest).
	man := filepath.Join(dir, export.Dir(m.Seq), export.ManifestName)
	b, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(man, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, export.Dir(m.Seq+1)), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs testutil.Buffer
	s, err := serve.New(serve.Options{Store: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		if changed, _ := s.Update(); changed {
			t.Fatal("an unusable store served a model")
		}
	}
	out := logs.String()
	damaged := fmt.Sprintf("%s/%s", export.Dir(m.Seq), export.ManifestName)
	writing := export.Dir(m.Seq+1) + ": no " + export.ManifestName + " yet: the export is being written"
	if n := strings.Count(out, damaged); n != 1 {
		t.Errorf("the damaged export is logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, writing); n != 1 {
		t.Errorf("the export being written is logged %d times, want once:\n%s", n, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, export.Dir(m.Seq+1)) && (strings.Contains(l, "corrupt") || strings.Contains(l, "level=WARN")) {
			t.Errorf("the export being written is called damaged: %s", l)
		}
	}
	if !strings.Contains(out, "no usable full export") {
		t.Errorf("no line says that nothing can be served:\n%s", out)
	}
}
