package scheduler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/scheduler"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestExportsOnRequest: exports asked for with controlplane.RequestExport
// (scheduler -export-now) form a chain in the store: a full export of
// every row, then a delta of the rows pushed since, int8 as configured,
// with the model's config and shape; the oldest chain is pruned once
// full_every makes a new full export and keep is 1.
func TestExportsOnRequest(t *testing.T) {
	const p = "/xps/exports"
	srv := startEtcd(t)
	cli := newClient(t, srv)
	store := t.TempDir()
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 2, Partitions: 8, LeaseTTL: 2 * time.Second,
		TickInterval: 50 * time.Millisecond, Logger: testLogger(t)}
	opts.Config.Export = export.Policy{Store: store, Every: -1, FullEvery: 3, Keep: 1, Tables: map[string]string{"emb": export.Int8}}
	opts.Config.Model.Tables = []ams.TableSpec{{Name: "emb", Dim: 4}}
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"ams-0", "ams-1"} {
		defer register(t, cli, p, membership.KindAMS, id, startShard(t, id)).Close()
	}
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	conn := testutil.Conn(cli, p)
	ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	push := func(ids []uint64) { // a client knows the tables it declared
		withClient(t, conn, func(c *client.Client) error {
			if err := c.Declare(testCtx(t), []ams.TableSpec{{Name: "emb", Dim: 4}}, nil); err != nil {
				return err
			}
			return c.Push(testCtx(t), []client.Table{{Name: "emb", IDs: ids, Rows: make([]float32, 4*len(ids))}}, nil)
		})
	}
	withClient(t, conn, func(c *client.Client) error {
		ctx := testCtx(t)
		d := client.Dense{Spec: ams.DenseSpec{Name: "mlp", Size: 10}, Init: make([]float32, 10)}
		if err := c.Declare(ctx, []ams.TableSpec{{Name: "emb", Dim: 4}}, []client.Dense{d}); err != nil {
			return err
		}
		return c.PutState(ctx, []client.StateEntry{{Key: client.ConfigStateKey, Value: []byte(`{"a":1}`)},
			{Key: client.ShapeStateKey, Value: []byte(`{"fields":3}`)}})
	})
	push(ids)
	res, err := conn.RequestExport(testCtx(t))
	if err != nil || res.Kind != export.KindFull || res.Rows != int64(len(ids)) {
		t.Fatalf("first export: %+v, %v; want a full export of %d rows", res, err, len(ids))
	}
	push(ids[:3])
	res, err = conn.RequestExport(testCtx(t))
	if err != nil || res.Kind != export.KindDelta || res.Rows != 3 || res.Base != 1 {
		t.Fatalf("second export: %+v, %v; want a delta of 3 rows onto export 1", res, err)
	}
	if res.PauseSeconds <= 0 || res.Bytes <= 0 {
		t.Errorf("second export: pause %vs, %d bytes", res.PauseSeconds, res.Bytes)
	}
	checkDeltaManifest(t, store)
	// Nothing pushed: an empty delta. Then full_every 3 makes the fourth
	// export a full one, and keep 1 prunes the first chain.
	res, err = conn.RequestExport(testCtx(t))
	if err != nil || res.Kind != export.KindDelta || res.Rows+res.Deletes != 0 {
		t.Fatalf("third export: %+v, %v; want an empty delta", res, err)
	}
	res, err = conn.RequestExport(testCtx(t))
	if err != nil || res.Kind != export.KindFull || res.Rows != int64(len(ids)) || !slices.Equal(res.Removed, []uint64{1, 2, 3}) {
		t.Fatalf("fourth export: %+v, %v; want a full export pruning 1 to 3", res, err)
	}
	// A new leader (the scheduler restarted) goes on with the chain it
	// reads from the store: a delta onto export 4.
	s.Close()
	opts.ID = "sched-2"
	s2, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	eventually(t, 10*time.Second, "SERVING under the new leader", func() bool { return s2.Status().Phase == clusterfsm.Serving })
	push(ids[:2])
	res, err = conn.RequestExport(testCtx(t))
	if err != nil || res.Kind != export.KindDelta || res.Base != 4 || res.Rows != 2 {
		t.Fatalf("the new leader's export: %+v, %v; want a delta of 2 rows onto export 4", res, err)
	}
}

// checkDeltaManifest checks the chain of the export store: a full export
// and a delta, the delta with the model's config and shape, int8 rows
// and one file per shard.
func checkDeltaManifest(t *testing.T, store string) {
	t.Helper()
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	chain, skipped, err := export.Next(st, nil)
	if err != nil || len(skipped) > 0 || len(chain) != 2 {
		t.Fatalf("chain %v, skipped %v, %v", len(chain), skipped, err)
	}
	m := chain[1]
	if string(m.Config) != `{"a":1}` || string(m.Shape) != `{"fields":3}` || m.Tables[0].Quant != export.Int8 || m.Shards != 2 {
		t.Fatalf("delta manifest: config %s, shape %s, tables %+v, %d shards", m.Config, m.Shape, m.Tables, m.Shards)
	}
}

// TestExportEverySamples: with export.every_samples the scheduler exports
// once the workers' checkpoints in the model count that many more samples
// applied.
func TestExportEverySamples(t *testing.T) {
	const p = "/xps/export-samples"
	srv := startEtcd(t)
	cli := newClient(t, srv)
	store := t.TempDir()
	opts := scheduler.Options{Prefix: p, ID: "sched-1", Shards: 1, Partitions: 8, LeaseTTL: 2 * time.Second,
		TickInterval: 20 * time.Millisecond, Logger: testLogger(t)}
	opts.Config.Export = export.Policy{Store: store, Every: -1, EverySamples: 1000}
	s, err := scheduler.New(cli, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer register(t, cli, p, membership.KindAMS, "ams-0", startShard(t, "ams-0")).Close()
	eventually(t, 10*time.Second, "SERVING", func() bool { return s.Status().Phase == clusterfsm.Serving })
	conn := testutil.Conn(cli, p)
	st, err := snapshot.OpenDir(store)
	if err != nil {
		t.Fatal(err)
	}
	applied := func(n int64) {
		withClient(t, conn, func(c *client.Client) error {
			if err := c.Declare(testCtx(t), []ams.TableSpec{{Name: "emb", Dim: 4}}, []client.Dense{{Spec: ams.DenseSpec{Name: "mlp", Size: 4}, Init: make([]float32, 4)}}); err != nil {
				return err
			}
			return checkpoint.Store(testCtx(t), c, "worker-0", checkpoint.Checkpoint{Epoch: 1, Applied: n})
		})
	}
	exports := func() int { // complete ones: a directory appears before its manifest
		n := 0
		seqs, _ := export.Exports(st)
		for _, seq := range seqs {
			if _, err := export.ReadManifest(st, seq); err == nil {
				n++
			}
		}
		return n
	}
	// The count grows by 300 samples a step until an export appears: it
	// must hold at least 1000 samples (the first count is the base).
	for k := int64(1); exports() == 0; k++ {
		if k > 300 {
			t.Fatal("no export after 90000 samples applied")
		}
		applied(300 * k)
		time.Sleep(20 * time.Millisecond) // pacing only: ticks read the count
	}
	seqs, _ := export.Exports(st)
	m, err := export.ReadManifest(st, seqs[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples < 1000 {
		t.Fatalf("the first export holds %d samples applied, want at least 1000 (every_samples)", m.Samples)
	}
}
