package scheduler_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/tests/testutil"
)

// get returns the body of url, "" when it cannot be fetched.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// TestStatusPageServe runs a scheduler as its binary does (Serve, with an
// operations endpoint) and a standby, a shard and a worker that publishes
// progress reports: the leader's page shows the serving cluster, the
// members and the worker's curves; the standby's page says it is one and
// names the leader and its page's address.
func TestStatusPageServe(t *testing.T) {
	srv := startEtcd(t)
	cli0 := newClient(t, srv)
	const p = "/xps/status-page"
	proc := cli.Proc{Level: "info", HTTP: "127.0.0.1:0"}
	if err := proc.Start(testWriter{t}, "scheduler", "sched-a"); err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	ctx, cancel := context.WithCancel(testCtx(t))
	served := make(chan error, 1)
	go func() {
		served <- scheduler.Serve(ctx, newClient(t, srv), scheduler.Options{Prefix: p, ID: "sched-a", Shards: 1, Partitions: 8,
			LeaseTTL: 2 * time.Second, TickInterval: 50 * time.Millisecond, Logger: proc.Log}, &proc)
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	reg := register(t, cli0, p, membership.KindAMS, "ams-0", startShard(t, "ams-0"))
	defer reg.Close()
	worker, err := membership.Register(testCtx(t), cli0, p, membership.Member{Kind: membership.KindWorker, ID: "worker-0"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	conn := testutil.Conn(cli0, p)
	t0 := time.Now().Add(-10 * time.Second)
	put := func(i int) {
		r := job.Progress{Worker: "worker-0", Time: t0.Add(time.Duration(i) * 2 * time.Second), Epoch: 1, Epochs: 1,
			Samples: int64(1000 * (i + 1)), SamplesPerSecond: 500, Loss: 0.5, AUC: 0.7, RunningAUC: 0.7, TestAUC: math.NaN(), Lag: -1}
		if err := conn.PutProgress(testCtx(t), worker, r); err != nil {
			t.Fatal(err)
		}
	}
	// The page keeps the reports made while its scheduler watches (each
	// worker's latest is stored): the first one, once it shows, then more.
	url := "http://" + proc.Ops.Addr() + "/"
	var page string
	put(0)
	eventually(t, 10*time.Second, "the first report on the page", func() bool {
		return strings.Contains(get(t, url), `data-series="worker-0"`)
	})
	for i := 1; i < 5; i++ {
		put(i)
	}
	if err := conn.PutSnapshotResult(testCtx(t), controlplane.SnapshotResult{Seq: 4, Time: time.Now(), Applied: 5000}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the leader's page to show the serving cluster and the worker's curves", func() bool {
		page = get(t, url)
		return strings.Contains(page, `<b id="state">SERVING</b>`) && strings.Count(page, `data-series="worker-0"`) == 2 &&
			strings.Contains(page, `<td class="n">5000</td>`)
	})
	for _, want := range []string{"This scheduler, <b>sched-a</b>, leads the cluster.", "<td>ams-0</td>", "<td>worker-0</td>",
		`<td class="n">5000</td>`, `id="chart-auc"><svg`} {
		if !strings.Contains(page, want) {
			t.Errorf("the leader's page lacks %s", want)
		}
	}
	var js struct {
		Leader  string `json:"leader"`
		Members []struct {
			ID, Addr string
		} `json:"members"`
		Workers []struct{ Reports []job.Progress }
	}
	if err := json.Unmarshal([]byte(get(t, url+"status.json")), &js); err != nil || js.Leader != "sched-a" ||
		len(js.Workers) != 1 || len(js.Workers[0].Reports) != 5 || !math.IsNaN(js.Workers[0].Reports[0].TestAUC) {
		t.Fatalf("status.json: %+v, %v", js, err)
	}
	checkSchedulerMetrics(t, "http://"+proc.Ops.Addr()+"/metrics")
	checkStandbyPage(t, srv, p, proc.Ops.Addr())
}

// checkSchedulerMetrics: the leader's /metrics comes to hold what its
// page shows (the snapshot result reaches the board when its watch
// delivers it).
func checkSchedulerMetrics(t *testing.T, url string) {
	wants := []string{"xps_scheduler_leader 1", `xps_scheduler_cluster_state{state="SERVING"} 1`,
		`xps_scheduler_members{kind="worker"} 1`, "xps_scheduler_snapshot_seq 4", "xps_scheduler_snapshot_applied_samples 5000",
		"xps_scheduler_quarantined_records 0"}
	var metrics string
	eventually(t, 10*time.Second, "the scheduler's metrics", func() bool {
		metrics = get(t, url)
		for _, want := range wants {
			if !strings.Contains(metrics, want) {
				return false
			}
		}
		return true
	})
}

// checkStandbyPage starts a standby scheduler of the cluster under p: its
// page names the leader and the address it advertises (leaderAddr), and
// shows the state the leader recorded and the worker's curves.
func checkStandbyPage(t *testing.T, srv *etcdembed.Server, p, leaderAddr string) {
	b, err := scheduler.New(newClient(t, srv), scheduler.Options{Prefix: p, ID: "sched-b", Shards: 1, Partitions: 8,
		LeaseTTL: 2 * time.Second, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	hs := httptest.NewServer(b.StatusHandler())
	defer hs.Close()
	want := "is a <b>standby</b>: the leader is <b>sched-a</b> at " + leaderAddr
	eventually(t, 10*time.Second, "the standby's page", func() bool {
		page := get(t, hs.URL+"/")
		return strings.Contains(page, want) && strings.Contains(page, `<b id="state">SERVING</b>`) &&
			strings.Contains(page, `data-series="worker-0"`) && strings.Contains(page, "<td>sched-b</td>")
	})
}
