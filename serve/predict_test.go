package serve_test

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/serve"
)

// TestSplitScoresAsWhole: a request scored in blocks on idle cores
// (Options.SplitCandidates) gets the scores it gets scored whole, bit for
// bit, and the same refusals: a bad candidate in a later block named by
// its index in the request, the features over MaxFeatures counted across
// the blocks.
func TestSplitScoresAsWhole(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // up to 4 blocks on any machine
	store, test, _ := trainAndExport(t, "libffm", export.FP32)
	cands := candidates(t, test, 150)
	features := 0
	for _, c := range cands {
		features += len(strings.Fields(c))
	}
	user := "0:u1 1:u2 5:u3"
	open := func(split, maxFeatures int) *serve.Server {
		s, err := serve.New(serve.Options{Store: store, SplitCandidates: split, Limits: serve.Limits{MaxFeatures: maxFeatures}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	whole := open(-1, 0)
	want, err := whole.Predict(&serve.Request{User: user, Candidates: cands})
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []int{1, 20, 37, 75} { // 4, 4, 4 and 2 blocks of 150
		s := open(split, 0)
		got, err := s.Predict(&serve.Request{User: user, Candidates: cands})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Scores {
			if got.Scores[i] != want.Scores[i] {
				t.Fatalf("split %d: candidate %d scores %v, whole %v", split, i, got.Scores[i], want.Scores[i])
			}
		}
		bad := append([]string(nil), cands...)
		bad[140] = "1:a 2"
		if _, err := s.Predict(&serve.Request{User: user, Candidates: bad}); err == nil || !strings.Contains(err.Error(), "candidate 140:") {
			t.Fatalf("split %d: a bad candidate 140: %v", split, err)
		}
	}
	tight := open(1, features+3-1) // the user's 3 and the candidates' features, less one
	if _, err := tight.Predict(&serve.Request{User: user, Candidates: cands}); err == nil || !strings.Contains(err.Error(), "over MaxFeatures") {
		t.Fatalf("a request one feature over MaxFeatures, split: %v", err)
	}
	if _, err := open(1, features+3).Predict(&serve.Request{User: user, Candidates: cands}); err != nil {
		t.Fatalf("a request at MaxFeatures, split: %v", err)
	}
}

// candidates returns the features of the first n lines of libFFM file
// path, each a candidate.
func candidates(t testing.TB, path string, n int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var out []string
	for sc.Scan() && len(out) < n {
		_, feats, _ := strings.Cut(sc.Text(), " ") // drop the label
		out = append(out, feats)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < n {
		t.Fatalf("%s has %d lines, want %d", path, len(out), n)
	}
	return out
}
