package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/etcdembed"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestPrometheusScrapesCluster runs a real Prometheus server (Debian's
// prometheus package) scraping the -http endpoints of two shards, a
// scheduler and a worker; PromQL over its HTTP API returns the training
// rate, and every target is up.
func TestPrometheusScrapesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian's prometheus package; test.sh installs it as root): skipping the scrape test")
	}
	bin := build(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	etcd, err := etcdembed.Start(ctx, etcdembed.Options{Dir: filepath.Join(dir, "etcd"), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ep := strings.Join(etcd.Endpoints(), ",")
	targets := map[string]string{"ams-0": testutil.FreeAddr(t), "ams-1": testutil.FreeAddr(t), "scheduler": testutil.FreeAddr(t), "worker-0": testutil.FreeAddr(t)}
	for _, id := range []string{"ams-0", "ams-1"} {
		start(t, id, filepath.Join(bin, "ams"), "-etcd", ep, "-cluster", "prom", "-id", id, "-http", targets[id])
	}
	start(t, "scheduler", filepath.Join(bin, "scheduler"), "-etcd", ep, "-cluster", "prom", "-shards", "2", "-http", targets["scheduler"])
	// Generated data, many epochs: the worker trains until the test ends.
	start(t, "worker", filepath.Join(bin, "worker"), "-etcd", ep, "-cluster", "prom", "-train-samples", "20000",
		"-epochs", "100000", "-quiet", "-http", targets["worker-0"])
	api := startPrometheus(t, prom, dir, targets)
	rate := waitQuery(t, ctx, api, `sum(rate(xps_worker_samples_trained_total[10s]))`)
	t.Logf("training rate by PromQL: %.0f samples/s", rate)
	if up := waitQuery(t, ctx, api, `count(up == 1)`); up != float64(len(targets)) {
		t.Errorf("%v targets up, want %d", up, len(targets))
	}
	if rows := waitQuery(t, ctx, api, `sum(xps_ams_table_rows)`); rows <= 0 {
		t.Errorf("sum of the shards' rows %v, want > 0", rows)
	}
}

// startPrometheus starts a Prometheus server scraping targets every
// second and returns its API base URL.
func startPrometheus(t *testing.T, prom, dir string, targets map[string]string) string {
	var cfg strings.Builder
	cfg.WriteString("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n")
	for job, addr := range targets {
		fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs: [{targets: ['%s']}]\n", job, addr)
	}
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	start(t, "prometheus", prom, "--config.file="+file, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	return "http://" + addr
}

// waitQuery evaluates a PromQL query until it returns a positive value
// (at most 2 minutes, within ctx), and returns it.
func waitQuery(t *testing.T, ctx context.Context, api, query string) float64 {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		v, answer := promQuery(ctx, api, query)
		if v > 0 {
			return v
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("PromQL %q never returned a positive value; last answer: %s", query, answer)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func promQuery(ctx context.Context, api, query string) (float64, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+"/api/v1/query?query="+url.QueryEscape(query), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &r) != nil || len(r.Data.Result) == 0 {
		return 0, string(b)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, _ := strconv.ParseFloat(s, 64)
	return v, string(b)
}
