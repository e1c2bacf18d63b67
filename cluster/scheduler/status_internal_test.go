package scheduler

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/job"
)

// TestRing pushes past the capacity: the last values stay, oldest first.
func TestRing(t *testing.T) {
	r := newRing[int](3)
	if _, ok := r.last(); ok || len(r.items()) != 0 {
		t.Fatal("an empty ring has values")
	}
	for i := 1; i <= 7; i++ {
		r.push(i)
		want := []int{}
		for v := max(1, i-2); v <= i; v++ {
			want = append(want, v)
		}
		if got := r.items(); !slices.Equal(got, want) {
			t.Fatalf("after pushing 1..%d: %v, want %v", i, got, want)
		}
		if last, ok := r.last(); !ok || last != i {
			t.Fatalf("after pushing 1..%d: last %d, %v", i, last, ok)
		}
	}
	items := r.items()
	items[0] = 100 // a copy
	if r.items()[0] == 100 {
		t.Fatal("items shares the ring's buffer")
	}
}

// report returns the JSON of a progress report, as a worker publishes it.
func report(t *testing.T, p job.Progress) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBoard feeds the board updates: a revision seen is not taken twice,
// the history is bounded, results come newest first, and past maxWorkers
// the worker silent the longest is forgotten.
func TestBoard(t *testing.T) {
	b := newBoard(4, 2, 2)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := int64(1); i <= 6; i++ {
		u := controlplane.StatusUpdate{Rev: 10 + i, Worker: "worker-0",
			Progress: report(t, job.Progress{Samples: 100 * i, Time: t0.Add(time.Duration(i) * time.Second), AUC: math.NaN()})}
		if !b.apply(u) {
			t.Fatalf("update %d not taken", i)
		}
		if b.apply(u) {
			t.Fatalf("update %d taken twice", i)
		}
	}
	if b.apply(controlplane.StatusUpdate{Rev: 99, Worker: "worker-0", Progress: json.RawMessage(`{`)}) {
		t.Fatal("an undecodable report was taken")
	}
	for i := uint64(1); i <= 3; i++ {
		b.apply(controlplane.StatusUpdate{Rev: int64(20 + i), Snapshot: &controlplane.SnapshotResult{Seq: i}})
		b.apply(controlplane.StatusUpdate{Rev: int64(30 + i), Export: &controlplane.ExportResult{Seq: i}})
	}
	v := b.view()
	if len(v.Workers) != 1 || len(v.Workers[0].Reports) != 4 {
		t.Fatalf("workers %+v, want worker-0 with its last 4 reports", v.Workers)
	}
	for i, p := range v.Workers[0].Reports {
		if p.Samples != int64(300+100*i) || p.Worker != "worker-0" || !math.IsNaN(p.AUC) {
			t.Fatalf("report %d: %+v", i, p)
		}
	}
	if len(v.Snapshots) != 2 || v.Snapshots[0].Seq != 3 || v.Snapshots[1].Seq != 2 || len(v.Exports) != 2 || v.Exports[0].Seq != 3 {
		t.Fatalf("snapshots %+v, exports %+v: want the last 2, newest first", v.Snapshots, v.Exports)
	}
	// worker-1 reports later than worker-0; worker-2 makes a third: worker-0 goes.
	b.apply(controlplane.StatusUpdate{Rev: 50, Worker: "worker-1", Progress: report(t, job.Progress{Time: t0.Add(time.Hour)})})
	b.apply(controlplane.StatusUpdate{Rev: 51, Worker: "worker-10", Progress: report(t, job.Progress{Time: t0})})
	var names []string
	for _, w := range b.view().Workers {
		names = append(names, w.Name)
	}
	if !slices.Equal(names, []string{"worker-1", "worker-10"}) {
		t.Fatalf("workers %v, want worker-1 and worker-10", names)
	}
	if slices.SortedFunc(slices.Values([]string{"worker-10", "worker-2", "a", "worker-1"}), compareNames)[3] != "worker-10" {
		t.Fatal("worker-10 does not sort after worker-2")
	}
}

// statusFixture is a page's data: a leader's view of two workers, one
// gone, with a snapshot that failed with an error full of markup.
func statusFixture(t *testing.T) *statusData {
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	d := &statusData{Now: now, Prefix: "/xps/page", Job: "job-1", Self: "sched-a", Leading: true, Leader: "sched-a",
		State: "SERVING", Version: 7, StateTime: now.Add(-time.Minute)}
	d.Members = []controlplane.MemberStatus{
		{Member: membership.Member{Kind: "ams", ID: "ams-0", Addr: "127.0.0.1:7000", PID: 11}, TTL: 5 * time.Second, Left: 4 * time.Second},
		{Member: membership.Member{Kind: "worker", ID: "worker-0", PID: 12}, TTL: 5 * time.Second, Left: 3 * time.Second},
	}
	for _, name := range []string{"worker-0", "worker-1"} {
		h := workerHistory{Name: name}
		for i := 0; i < 10; i++ {
			p := job.Progress{Worker: name, Time: now.Add(time.Duration(i-10) * 2 * time.Second), Epoch: 1, Epochs: 2,
				Samples: int64(1000 * (i + 1)), SamplesPerSecond: 500 + float64(i), Loss: 0.5 - 0.01*float64(i),
				AUC: 0.7 + 0.01*float64(i), RunningAUC: 0.69 + 0.01*float64(i), TestAUC: math.NaN(), Lag: int64(100 - i), Rows: 42}
			if i == 0 {
				p.AUC = math.NaN() // a window of one class
			}
			h.Reports = append(h.Reports, p)
		}
		d.Workers = append(d.Workers, h)
	}
	d.Snapshots = []controlplane.SnapshotResult{{Seq: 2, Time: now, Error: `<script>alert("x")</script>`},
		{Seq: 1, Time: now.Add(-time.Minute), Seconds: 1.25, Applied: 5000, Rows: 77}}
	d.Exports = []controlplane.ExportResult{{Seq: 1, Kind: "full", Time: now, Rows: 77, Bytes: 1 << 20}}
	return d
}

// TestRenderStatus renders a leader's page and a standby's, and checks
// their content: state, version, members and heartbeats, workers, one
// SVG chart per figure with a path per series, the results, and markup
// from etcd escaped.
func TestRenderStatus(t *testing.T) {
	d := statusFixture(t)
	var buf bytes.Buffer
	if err := renderStatus(&buf, d); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		`<b id="state">SERVING</b> at version <b id="version">7</b>`,
		`This scheduler, <b>sched-a</b>, leads the cluster.`,
		`<td>ams-0</td><td>127.0.0.1:7000</td>`, `about 1s ago (lease 4s of 5s left)`,
		`<td>worker-1 (gone)</td>`, `<td class="n">509</td>`, // worker-0's newest rate
		`Kafka lag: <b>91</b> messages behind`, // worker-0's only: worker-1 is gone
		`id="chart-throughput"><svg`, `id="chart-loss"><svg`, `id="chart-auc"><svg`, `id="chart-lag"><svg`,
		`data-series="worker-0"`, `data-series="worker-1 window"`, `data-series="worker-0 running"`,
		`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`,
		`<td class="n">1.25</td><td class="n">5000</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, `data-series="worker-0 test"`) {
		t.Error("the page holds a script, or a test AUC series with no point")
	}
	if n := strings.Count(page, `<path class="series"`); n != 2+2+4+2 {
		t.Errorf("%d series paths, want 10 (throughput 2, loss 2, auc 4, lag 2)", n)
	}

	// A standby names the leader; no report yet: notes instead of charts.
	d.Leading, d.Leader, d.LeaderAddr, d.Workers = false, "sched-b", "10.0.0.2:8080", nil
	buf.Reset()
	if err := renderStatus(&buf, d); err != nil {
		t.Fatal(err)
	}
	page = buf.String()
	for _, want := range []string{`is a <b>standby</b>: the leader is <b>sched-b</b> at 10.0.0.2:8080`,
		`no progress report yet`, `id="chart-auc"><p>no progress reports yet</p>`, `Kafka lag: no Kafka source`} {
		if !strings.Contains(page, want) {
			t.Errorf("the standby's page lacks %s", want)
		}
	}
	if strings.Contains(page, "<svg") || strings.Contains(page, "chart-lag") {
		t.Error("a page without reports has a chart")
	}
}

// TestStatusJSON checks that the page's figures encode, undefined ones as
// null.
func TestStatusJSON(t *testing.T) {
	b, err := json.Marshal(statusFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"state":"SERVING"`, `"test_auc":null`, `"worker":"worker-1"`, `"ttl":5000000000`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("status.json lacks %s", want)
		}
	}
}
