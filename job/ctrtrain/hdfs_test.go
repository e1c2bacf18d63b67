package ctrtrain

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/reader/parquetsrc"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestTrainsFromHDFS puts generated CTR files on the HDFS test server
// (small blocks, so every file spans several) and runs two workers whose
// file splits the scheduler assigns from the hdfs:// glob: together they
// train on every sample once, and the model learns.
func TestTrainsFromHDFS(t *testing.T) { trainFromHDFS(t, "libffm") }

// TestTrainsParquetFromHDFS is TestTrainsFromHDFS with Parquet files read
// as sample groups by user, each file's row group spread over several
// HDFS blocks and cut by row ranges into the shuffle's blocks.
func TestTrainsParquetFromHDFS(t *testing.T) { trainFromHDFS(t, "parquet") }

func trainFromHDFS(t *testing.T, format string) {
	ctx, cancel := context.WithCancel(testutil.JobCtx(t))
	defer cancel()
	// Parquet's dictionary pages make a file of few bytes: smaller blocks
	// and splits, so that a file still spans several of each.
	block, split := int64(64<<10), int64(50<<10)
	if format == "parquet" {
		block, split = 8<<10, 6<<10
	}
	srv, err := hdfstest.Start(hdfstest.Options{BlockSize: block})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fsys, err := hdfssrc.Dial(srv.NamenodeAddr(), "test")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := datagen.New(genConfig(11))
	if err != nil {
		t.Fatal(err)
	}
	const perFile, files, testSamples = 3000, 3, 2000
	put := func(name string, n int) { putGenerated(t, fsys, gen, name, n, format) }
	if err := fsys.Client().MkdirAll("/ctr/train", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range files {
		put(fmt.Sprintf("/ctr/train/part-%05d", i), perFile)
	}
	put("/ctr/test", testSamples)
	fsys.Close()
	if bl, err := srv.Blocks("/ctr/train/part-00000"); err != nil || len(bl) < 2 {
		t.Fatalf("test data: %d blocks (%v), want several", len(bl), err)
	}

	train := []string{hdfsconn.FormatURI(srv.NamenodeAddr(), "/ctr/train/part-*")}
	test := []string{hdfsconn.FormatURI(srv.NamenodeAddr(), "/ctr/test")}
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/hdfs-test",
		Config: config.Config{Job: config.JobConfig{Train: train, Workers: 2, SplitBytes: split}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	t.Setenv("HADOOP_USER_NAME", "trainer")
	cfg := smallConfig()
	cfg.Train.Format = format
	cfg.Model.Fields = genConfig(11).Fields
	if format == "parquet" {
		cfg.Train.Columns = parquetsrc.TokenColumns(genConfig(11).Fields, genConfig(11).UserFields, true)
	}
	results := runWorkers(t, ctx, 2, 0, job.Options{Config: withJob(cfg, train, test), Etcd: lc.Etcd(), Prefix: lc.Prefix()})
	epochs := int64(cfg.Train.Epochs)
	if got := results[0].Samples + results[1].Samples; got != epochs*perFile*files {
		t.Fatalf("workers trained %d + %d samples, want %d epochs of %d", results[0].Samples, results[1].Samples,
			epochs, perFile*files)
	}
	if results[0].Samples == 0 || results[1].Samples == 0 {
		t.Fatalf("a worker trained nothing: %d, %d", results[0].Samples, results[1].Samples)
	}
	for i, r := range results {
		if r.TestSamples != testSamples || r.TestAUC < 0.6 {
			t.Errorf("worker %d: test AUC %.4f on %d samples, want > 0.6 on %d", i, r.TestAUC, r.TestSamples, testSamples)
		}
		if !strings.Contains(r.Data, "hdfs://") {
			t.Errorf("worker %d data %q does not name HDFS", i, r.Data)
		}
	}
	t.Logf("worker 0: %d samples, test AUC %.4f; worker 1: %d samples", results[0].Samples, results[0].TestAUC,
		results[1].Samples)
}

// putGenerated writes the next n samples of gen to the HDFS file name, as
// libFFM or Parquet.
func putGenerated(t *testing.T, fsys *hdfssrc.FS, gen *datagen.Generator, name string, n int, format string) {
	w, err := fsys.Client().Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeGenTo(w, gen, n, format); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
