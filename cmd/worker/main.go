// Command worker trains a CTR model against the AMS shards of a cluster, or,
// with -output slide (config model.output.kind: slide), an extreme
// multi-label classifier on XMLRepository files: sparse features ->
// embedding sum (on the AMS shards) -> hidden layers -> a SLIDE output layer
// (in this worker), reporting P@1/3/5 (package internal/xctrain):
//
//	worker -local -output slide -format xml -dim 128 \
//	       -train bibtex/train.txt -test bibtex/test.txt
//
// The one-command demo, everything in one process (embedded etcd, two AMS
// shards, the scheduler and this worker, talking gRPC over loopback):
//
//	go run ./cmd/worker -local
//
// Against a running cluster (see cmd/ams and cmd/scheduler):
//
//	worker -etcd 127.0.0.1:2379 -train train.libffm -test test.libffm \
//	       -workers 2 -worker-index 0
//
// Flags (flags override the -config file; see README.md for the config):
//
//	-set path=value set any config key as the YAML file would, repeatable:
//	                -set train.batch_size=512 -set model.tables[*].optimizer.lr=0.02
//	                (lists: -set model.hidden=64,32); the short flags below that
//	                name config keys (-epochs, -dim, ...) are aliases of -set
//	                (config.Aliases), applied in command-line order
//	-local          run an embedded cluster in this process; the worker pulls and
//	                pushes rows by calling the embedded shards directly
//	-local-grpc     with -local: pull and push over loopback gRPC instead, as a
//	                separate process would
//	-shards         AMS shards of the embedded cluster (default 2)
//	-stripes        stripe owners per shard of the embedded cluster (default GOMAXPROCS/shards, at least 1)
//	-snapshot-store, -snapshot-every
//	                the embedded cluster's scheduler takes a snapshot into this
//	                directory (or hdfs:// URI) at this interval (default 10m when
//	                a store is given; see cmd/scheduler)
//	-etcd           etcd endpoints of an external cluster, comma-separated
//	-cluster        cluster name; keys live under /xps/<cluster> (default "default")
//	-config         YAML model/training config file
//	-train, -test   data: files, directories or globs, comma-separated; without
//	                -train the built-in generated dataset is used
//	-format         libffm, libfm, libsvm, group, xml or criteo (default from config: libffm)
//	-kafka, -topic  train from a Kafka topic (bootstrap brokers, topic) instead of files;
//	                positions are kept in the model; with -workers > 1 the scheduler
//	                (-kafka, -topic) deals the partitions
//	-streaming      true: never end, train on new messages as they come
//	-on-error       stop or skip malformed lines (default from config: stop)
//	-workers        number of workers W sharing the training data (default 1)
//	-worker-index   this worker's index i in [0, W); with W > 1 and -train, the
//	                worker reads the share the scheduler assigns (scheduler -train -workers)
//	-sync           true: sync mode (train.sync): a barrier per batch, gradients
//	                averaged across the workers
//	-epochs, -batch-size, -seed, -eval-every, -hidden, -dim, -lr, -dense-lr
//	                override the config's values
//	-train-samples  generated training samples (override data.train_samples)
//	-output         logit (CTR, the default) or slide (extreme classification:
//	                needs -format xml, -train, one worker)
//	-sparsity, -hash, -output-lr, -output-hidden
//	                override model.output.sparsity (1 = dense training),
//	                .hash (dwta or simhash), .lr and .hidden
//	-json           print the summary as one JSON object on the last line of stdout
//	-print-config   print the effective config as YAML and exit
//	-quiet          no progress lines
//	-cpuprofile     write a CPU profile of the whole run to a file
//	-log-level      debug, info, warn or error (default warn)
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/internal/config"
	"github.com/xdlgo/xps/internal/local"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/internal/worker"
	"github.com/xdlgo/xps/internal/xctrain"
)

type flags struct {
	local, localGRPC              bool
	asJSON, printConfig, quiet    bool
	shards, stripes, index        int
	etcd, clusterName, configFile string
	level, cpuProfile             string
	leaseTTL                      time.Duration
}

func main() {
	var f flags
	fs := flag.CommandLine
	fs.BoolVar(&f.local, "local", false, "run an embedded cluster (etcd, AMS shards, scheduler) in this process")
	fs.BoolVar(&f.localGRPC, "local-grpc", false, "with -local: pull and push over loopback gRPC like a separate process, instead of calling the embedded shards directly")
	fs.IntVar(&f.shards, "shards", 2, "AMS shards of the embedded cluster")
	fs.IntVar(&f.stripes, "stripes", 0, "stripe owners per AMS shard of the embedded cluster (default GOMAXPROCS/shards, at least 1)")
	fs.StringVar(&f.etcd, "etcd", "", "etcd endpoints of an external cluster, comma-separated host:port")
	fs.StringVar(&f.clusterName, "cluster", "default", "cluster name")
	fs.StringVar(&f.configFile, "config", "", "YAML model/training config file")
	fs.IntVar(&f.index, "worker-index", 0, "this worker's index in [0, workers)")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object on the last line of stdout")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the effective config as YAML and exit")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	fs.StringVar(&f.level, "log-level", "warn", "log level: debug, info, warn, error")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", membership.DefaultTTL, "TTL of the worker's etcd lease: a worker silent this long is declared dead and the cluster rolls back")
	var overrides config.Overrides
	overrides.Bind(fs)
	flag.Parse()
	if err := run(f, &overrides); err != nil {
		cli.Fatal("worker", err)
	}
}

func run(f flags, overrides *config.Overrides) error {
	cfg, err := config.LoadWith(f.configFile, overrides)
	if err != nil {
		return err
	}
	if f.printConfig {
		b, err := cfg.Marshal()
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(b)
		return err
	}
	log, err := cli.Logger(f.level)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		stopProfile, err := cli.StartCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if f.local == (f.etcd != "") {
		flag.Usage()
		return errors.New("give exactly one of -local and -etcd")
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	var progress io.Writer = os.Stderr
	if f.quiet {
		progress = nil
	}
	prefix, err := membership.Prefix(f.clusterName)
	if err != nil {
		return err
	}
	opts := worker.JobOptions{Config: cfg, Prefix: prefix, Index: f.index, Count: cfg.Job.Workers,
		Train: cfg.Job.Train, Test: cfg.Job.Test, Progress: progress, Logger: log, LeaseTTL: f.leaseTTL}
	if cfg.Model.Output.Kind == config.OutputSLIDE && len(cfg.Job.Train) == 0 {
		return errors.New("-output slide needs -train (XMLRepository files; cmd/xcgen generates some)")
	}
	if f.local {
		if progress != nil {
			fmt.Fprintf(progress, "starting embedded cluster: etcd, %d AMS shards, scheduler\n", f.shards)
		}
		lc, err := local.Start(ctx, local.Options{Shards: f.shards, Stripes: f.stripes, Prefix: prefix, Logger: log, Snapshot: cfg.Snapshot})
		if err != nil {
			return err
		}
		defer lc.Close()
		opts.Etcd = lc.Etcd()
		if !f.localGRPC {
			opts.Local = lc
		}
	} else {
		cl, err := membership.Dial(ctx, cli.Endpoints(f.etcd), log)
		if err != nil {
			return err
		}
		defer cl.Close()
		opts.Etcd = cl
	}
	var res any
	if cfg.Model.Output.Kind == config.OutputSLIDE {
		r, err := xctrain.RunJob(ctx, xctrain.JobOptions{Config: cfg, Etcd: opts.Etcd, Prefix: prefix, Index: f.index,
			Count: cfg.Job.Workers, Train: opts.Train, Test: opts.Test, Progress: progress, Logger: log, Local: opts.Local})
		if err != nil {
			return err
		}
		printXCSummary(os.Stdout, r)
		res = r
	} else {
		r, err := worker.RunJob(ctx, opts)
		if err != nil {
			return err
		}
		printSummary(os.Stdout, r)
		res = r
	}
	if f.asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stdout, "%s\n", b)
	}
	return nil
}

func printXCSummary(w io.Writer, r xctrain.JobResult) {
	fmt.Fprintf(w, "%s: trained %d samples (%d epochs) in %.1fs: %.0f samples/s on %d AMS shards\n",
		r.Worker, r.Samples, r.Epochs, r.Seconds, r.SamplesPerSecond, r.Shards)
	fmt.Fprintf(w, "%s: SLIDE output of %d labels over %d inputs, sparsity %v, %s K=%d L=%d R=%d, %.0f MB\n",
		r.Worker, r.Labels, r.InputDim, r.Sparsity, r.Hash, r.K, r.L, r.R, float64(r.LayerBytes)/1e6)
	if e := r.Test; e.Samples > 0 {
		if e.Sparse != nil {
			fmt.Fprintf(w, "%s: test %v with sparse inference (%.2f ms for one sample)\n", r.Worker, *e.Sparse, e.SparseMs)
		}
		if e.Dense != nil {
			fmt.Fprintf(w, "%s: test %v with dense inference (%.2f ms for one sample)\n", r.Worker, *e.Dense, e.DenseMs)
		}
	}
	fmt.Fprintf(w, "%s: wall time %.1fs (data %.1fs)\n", r.Worker, r.WallSeconds, r.LoadSeconds)
}

func printSummary(w io.Writer, r worker.JobResult) {
	fmt.Fprintf(w, "%s: trained %d samples (%d epochs) in %.1fs: %.0f samples/s on %d AMS shards\n",
		r.Worker, r.Samples, r.Epochs, r.Seconds, r.SamplesPerSecond, r.Shards)
	fmt.Fprintf(w, "%s: test AUC %.4f, logloss %.4f on %d samples", r.Worker, r.TestAUC, r.TestLogLoss, r.TestSamples)
	if r.BestAUC != nil {
		fmt.Fprintf(w, " (best achievable AUC %.4f)", *r.BestAUC)
	}
	fmt.Fprintf(w, "\n%s: wall time %.1fs (data %.1fs)", r.Worker, r.WallSeconds, r.LoadSeconds)
	if len(r.Nodes) > 1 && r.Nodes[1] > 0 {
		fmt.Fprintf(w, "; compression %.1f samples per level-1 node", float64(r.Nodes[0])/float64(r.Nodes[1]))
	}
	if r.BytesRead > 0 && r.Samples > 0 {
		fmt.Fprintf(w, "; %.0f bytes read per sample", float64(r.BytesRead)/float64(r.Samples))
	}
	fmt.Fprintf(w, "\n%s: last position %s", r.Worker, r.Position)
	if r.Restores > 0 {
		fmt.Fprintf(w, "; resumed %d times after the cluster was restored from a snapshot", r.Restores)
	}
	fmt.Fprintf(w, "\n")
}
