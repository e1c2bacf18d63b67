package job_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/xdlgo/xps/job"
)

// TestEvents: each event is one JSON line naming itself, a progress
// report's undefined figures null, the end's error given only when there
// is one; a failed write is kept and later events dropped.
func TestEvents(t *testing.T) {
	var buf bytes.Buffer
	ev := job.NewEvents(&buf)
	ev.Start(job.Started{StatusPage: "http://127.0.0.1:1/", Etcd: "127.0.0.1:2", Cluster: "default"})
	ev.Progress(job.Progress{Worker: "worker-0", Samples: 100, AUC: math.NaN(), Loss: 0.5})
	ev.End(map[string]int{"samples": 100}, nil)
	ev.End(nil, errors.New("stopped"))
	var got []map[string]any
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, m)
	}
	if len(got) != 4 {
		t.Fatalf("%d lines, want 4", len(got))
	}
	for i, want := range []string{"start", "progress", "end", "end"} {
		if got[i]["event"] != want {
			t.Fatalf("line %d: event %v, want %s", i, got[i]["event"], want)
		}
	}
	if got[0]["status_page"] != "http://127.0.0.1:1/" || got[0]["etcd"] != "127.0.0.1:2" || got[0]["cluster"] != "default" {
		t.Fatalf("start %v", got[0])
	}
	p := got[1]["progress"].(map[string]any)
	if p["auc"] != nil || p["loss"] != 0.5 || p["samples"] != 100.0 {
		t.Fatalf("progress %v: want auc null, loss 0.5, samples 100", p)
	}
	if _, ok := got[2]["error"]; ok || got[2]["result"].(map[string]any)["samples"] != 100.0 {
		t.Fatalf("a job that ended well: %v", got[2])
	}
	if got[3]["error"] != "stopped" || got[3]["result"] != nil {
		t.Fatalf("a job that failed: %v", got[3])
	}
	bad := job.NewEvents(failWriter{})
	bad.Start(job.Started{})
	bad.End(nil, nil)
	if bad.Err() == nil {
		t.Fatal("a failed write is not kept")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("gone") }
