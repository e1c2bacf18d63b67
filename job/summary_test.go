package job_test

import (
	"strings"
	"testing"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/job"
)

// TestSummaryNonFinite: the text summary warns of the rows the shards
// refused or clipped for a NaN or Inf, one line each, and says nothing of
// them when there were none.
func TestSummaryNonFinite(t *testing.T) {
	s := job.Summary{Worker: "worker-0",
		Tables: []ams.TableUsage{{Name: "emb", Counters: ams.Counters{NonFiniteRefused: 2}},
			{Name: "wide", Counters: ams.Counters{NonFiniteClipped: 3}}, {Name: "quiet"}},
		Dense: []ams.DenseUsage{{Name: "dense", NonFiniteRefused: 1}, {Name: "other"}}}
	var b strings.Builder
	s.WriteLines(&b)
	out := b.String()
	for _, want := range []string{
		"worker-0: WARNING: table emb: the shards refused 2 gradient rows holding a NaN or Inf",
		"worker-0: WARNING: table wide: the shards clipped 3 rows holding a NaN or Inf",
		"worker-0: WARNING: dense dense: the shards refused 1 gradient holding a NaN or Inf",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "WARNING"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, out)
	}
	s.Tables, s.Dense = []ams.TableUsage{{Name: "emb"}}, []ams.DenseUsage{{Name: "dense"}}
	b.Reset()
	s.WriteLines(&b)
	if strings.Contains(b.String(), "WARNING") {
		t.Errorf("a warning with nothing refused or clipped:\n%s", b.String())
	}
}
