package serve_test

import (
	"bufio"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/serve"
)

// BenchmarkPredict scores one request of a user and 150 candidates (the
// test file's first lines) with the tests' small model: the time and the
// allocations of Predict, parsing included (the HTTP and JSON layers
// not).
func BenchmarkPredict(b *testing.B) {
	dir, test, _ := trainAndExport(b, "libffm", export.FP32)
	s, err := serve.New(serve.Options{Store: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(test)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	defer s.Close()
	sc := bufio.NewScanner(f)
	var cands []string
	for sc.Scan() && len(cands) < 150 {
		fs := strings.Fields(sc.Text())
		cands = append(cands, strings.Join(fs[1:], " "))
	}
	req := &serve.Request{User: "0:u1", Candidates: cands}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := s.Predict(req); err != nil {
			b.Fatal(err)
		}
	}
}
