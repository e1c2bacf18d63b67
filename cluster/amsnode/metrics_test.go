package amsnode_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/cluster/amsnode"
	xtest "github.com/xdlgo/xps/tests/testutil"
)

// TestMetrics: with Options.Metrics, a scrape reports the shard's tables
// and version, and every RPC served lands in xps_ams_rpc_seconds.
func TestMetrics(t *testing.T) {
	srv := xtest.StartEtcd(t)
	cli := xtest.EtcdClient(t, srv.Endpoints())
	ctx := xtest.Ctx(t, time.Minute)
	reg := prometheus.NewPedanticRegistry()
	n, err := amsnode.Start(ctx, cli, amsnode.Options{ID: "ams-0", Prefix: "/xps/node-metrics", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Shard().Begin(1, 0); err != nil {
		t.Fatal(err)
	}
	pushWithNonFinite(t, n.Shard())
	cc, err := grpc.NewClient(n.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for range 3 {
		if _, err := amspb.NewAMSClient(cc).Stats(ctx, &amspb.StatsRequest{ClusterVersion: 1}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP xps_ams_table_rows Rows held, by table.
# TYPE xps_ams_table_rows gauge
xps_ams_table_rows{table="emb"} 3
# HELP xps_ams_version The cluster version the shard serves (0: none).
# TYPE xps_ams_version gauge
xps_ams_version 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "xps_ams_table_rows", "xps_ams_version"); err != nil {
		t.Error(err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP xps_ams_nonfinite_rows_total Rows holding a NaN or Inf, by table and action (refused: a pushed gradient not applied; clipped: NaN as 0, Inf as the table's nonfinite_bound, then applied or loaded).
# TYPE xps_ams_nonfinite_rows_total counter
xps_ams_nonfinite_rows_total{action="clipped",table="emb"} 0
xps_ams_nonfinite_rows_total{action="refused",table="emb"} 1
# HELP xps_ams_dense_nonfinite_refused_total Gradients of the shard's range of a dense vector refused for a NaN or Inf, by vector.
# TYPE xps_ams_dense_nonfinite_refused_total counter
xps_ams_dense_nonfinite_refused_total{dense="mlp"} 1
`), "xps_ams_nonfinite_rows_total", "xps_ams_dense_nonfinite_refused_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "xps_ams_rpc_seconds"); err != nil || n != 1 {
		t.Errorf("xps_ams_rpc_seconds series = %d, %v; want 1 (Stats, OK)", n, err)
	}
	// A node started again on the same registry (a restarted shard in
	// one process) replaces the collector and continues the histogram.
	n.Close()
	n2, err := amsnode.Start(ctx, cli, amsnode.Options{ID: "ams-0", Prefix: "/xps/node-metrics", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if err := n2.Shard().Begin(1, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "xps_ams_rpc_seconds", "xps_ams_version"); err != nil || n != 2 {
		t.Errorf("after a restart: %d series, %v; want the histogram's and the new shard's version", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP xps_ams_pushes_total Push requests applied.
# TYPE xps_ams_pushes_total counter
xps_ams_pushes_total 0
`), "xps_ams_pushes_total"); err != nil {
		t.Error(err)
	}
}

// pushWithNonFinite declares table emb and dense vector mlp on sh and
// pushes into them: three good rows, then a row holding a NaN (refused and
// counted), and a dense gradient holding an Inf (refused and counted).
func pushWithNonFinite(t *testing.T, sh *shard.Shard) {
	t.Helper()
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := sh.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sh.Push(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7, 8, 9}, Rows: make([]float32, 6)}}); err != nil {
		t.Fatal(err)
	}
	// A gradient row holding a NaN is refused, and counted; so is a
	// dense gradient.
	if err := sh.Push(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7, 8}, Rows: []float32{0, float32(math.NaN()), 1, 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sh.Declare(1, nil, []shard.DenseDecl{{Spec: ams.DenseSpec{Name: "mlp", Size: 2}, Lo: 0, Hi: 2, Init: []float32{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := sh.PushDense(1, "mlp", []float32{float32(math.Inf(-1)), 0}); err != nil {
		t.Fatal(err)
	}
}

// TestTierMetrics: a tiered table's cold tier shows in a scrape: its rows
// on disk and the rows demoted, by table, and the Pebble DB's figures, by
// directory.
func TestTierMetrics(t *testing.T) {
	srv := xtest.StartEtcd(t)
	cli := xtest.EtcdClient(t, srv.Endpoints())
	ctx := xtest.Ctx(t, time.Minute)
	reg := prometheus.NewPedanticRegistry()
	n, err := amsnode.Start(ctx, cli, amsnode.Options{ID: "ams-0", Prefix: "/xps/tier-metrics", Metrics: reg, Stripes: 1,
		TierDirs: []string{t.TempDir() + "/tier"}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Shard().Begin(1, 0); err != nil {
		t.Fatal(err)
	}
	spec := ams.TableSpec{Name: "emb", Dim: 2, Budget: ams.Budget{Rows: 10}, Storage: ams.StorageTiered}
	if _, err := n.Shard().Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	for b := range 10 {
		ids := []uint64{uint64(5 * b), uint64(5*b + 1), uint64(5*b + 2), uint64(5*b + 3), uint64(5*b + 4)}
		if err := n.Shard().Push(1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, 10)}}); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP xps_ams_tier_cold_rows Rows in the cold tier on disk, by table (tiered tables).
# TYPE xps_ams_tier_cold_rows gauge
xps_ams_tier_cold_rows{table="emb"} 40
# HELP xps_ams_tier_demoted_total Rows the budget moved from DRAM to disk, by table.
# TYPE xps_ams_tier_demoted_total counter
xps_ams_tier_demoted_total{table="emb"} 40
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "xps_ams_tier_cold_rows", "xps_ams_tier_demoted_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "xps_ams_tier_disk_bytes", "xps_ams_tier_write_amplification"); err != nil || n != 2 {
		t.Errorf("the Pebble DB's series: %d, %v; want 2 (one directory)", n, err)
	}
}
