package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/job/xctrain"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// slideSummary is the part of a SLIDE worker's JSON summary checked here.
type slideSummary struct {
	Samples int64 `json:"samples"`
	Owners  int   `json:"owners"`
	Test    struct {
		Samples int `json:"samples"`
		Dense   *struct {
			P1 float64 `json:"p1"`
		} `json:"dense"`
	} `json:"test"`
	Resumed *struct {
		Epoch int `json:"epoch"`
	} `json:"resumed"`
	ExactlyOnce *struct {
		Exact bool `json:"exact"`
	} `json:"exactly_once"`
}

// TestSlideSharesSurviveKill runs a SLIDE job of 2 worker processes, each
// holding one share of the layer (D-SLIDE over gRPC), with snapshots every
// few thousand samples. Once a snapshot holds both shares, worker 1 is
// killed with SIGKILL and started again: the dead share is a worker
// failure like any other, so the cluster rolls back to that snapshot, both
// workers resume from their shares in it, and the job ends exactly once
// with worker 0's evaluation over both shares.
func TestSlideSharesSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	train, test := filepath.Join(dir, "train.txt"), filepath.Join(dir, "test.txt")
	start(t, "xcgen", filepath.Join(bin, "xcgen"), "-features", "2000", "-labels", "1000", "-nnz", "20", "-seed", "5",
		"-samples", "20000", "-test-samples", "1000", "-out", train, "-test-out", test, "-quiet").wait(t, time.Minute)
	snaps := filepath.Join(dir, "snapshots")
	common := []string{"-etcd", strings.Join(etcd.Endpoints(), ","), "-cluster", "slide"}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), append(common, "-shards", "2", "-lease-ttl", "2s", "-workers", "2",
		"-snapshot-store", snaps, "-snapshot-every", "-1s", "-snapshot-every-samples", "4000", "-log-level", "info")...)
	for i := range 2 {
		start(t, fmt.Sprintf("ams-%d", i), filepath.Join(bin, "ams"), append(common, "-id", fmt.Sprintf("ams-%d", i), "-lease-ttl", "2s", "-store", snaps)...)
	}
	worker := func(i, life int) *proc {
		return start(t, fmt.Sprintf("worker-%d#%d", i, life), filepath.Join(bin, "worker"), append(common, "-output", "slide", "-format", "xml",
			"-train", train, "-test", test, "-workers", "2", "-worker-index", fmt.Sprint(i), "-dim", "32", "-sparsity", "0.05",
			"-epochs", "4", "-batch-size", "64", "-json", "-lease-ttl", "2s", "-log-level", "info")...)
	}
	store, err := snapshot.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w0, w1 := worker(0, 1), worker(1, 1)
	const written = "SLIDE layer written into the snapshot"
	testutil.Eventually(t, 4*time.Minute, "a snapshot holding both shares", func() bool {
		for _, w := range []*proc{w0, w1} {
			select {
			case err := <-w.done:
				t.Fatalf("%s exited (%v) before a snapshot held both shares:\n%s", w.name, err, w.output())
			default:
			}
		}
		return strings.Contains(w0.output(), written) && strings.Contains(w1.output(), written) &&
			testutil.SnapshotNames(t, store, xctrain.ShareFile(0, 2), xctrain.ShareFile(1, 2)) // complete: its manifest written
	})
	w1.cmd.Process.Kill()
	<-w1.done
	w1.done <- nil
	t.Logf("worker 1 killed after a snapshot with both shares")
	w1 = worker(1, 2)
	w0.wait(t, 5*time.Minute)
	w1.wait(t, 5*time.Minute)
	var s [2]slideSummary
	for i, p := range []*proc{w0, w1} {
		lines := strings.Split(strings.TrimSpace(p.output()), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s[i]); err != nil {
			t.Fatalf("%s: last line is not JSON: %v", p.name, err)
		}
		if s[i].Owners != 2 || s[i].ExactlyOnce == nil || !s[i].ExactlyOnce.Exact || s[i].Resumed == nil {
			t.Fatalf("%s: %+v (exactly once %+v, resumed %+v): want 2 owners, exactly once, resumed from the snapshot",
				p.name, s[i], s[i].ExactlyOnce, s[i].Resumed)
		}
		if !strings.Contains(p.output(), "resuming from the snapshot's checkpoint") {
			t.Fatalf("%s did not resume from the snapshot", p.name)
		}
	}
	if e := s[0].Test; e.Samples != 1000 || e.Dense == nil || e.Dense.P1 < 0.02 { // 20 times chance: it learned
		t.Fatalf("worker 0's evaluation over both shares: %+v", e)
	}
	t.Logf("after the rollback: worker 0 trained %d samples, worker 1 %d; dense P@1 %.4f", s[0].Samples, s[1].Samples, s[0].Test.Dense.P1)
}
