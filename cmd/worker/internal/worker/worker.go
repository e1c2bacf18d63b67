package worker

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/xdlgo/xps"
	"github.com/xdlgo/xps/autotune"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/ctrtrain"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/rowsrc"
)

// modelRoot is where -local keeps its models (and autotune its trials').
const modelRoot = "xps-models"

// DefaultGCPercent is the worker's garbage collector target (-gc-percent).
// A worker's heap is mostly its training data held in memory (the shuffle
// window, or all of it with train.in_memory), long-lived and pointer-free,
// so marking it costs little, while Go's own target, 100, lets garbage
// grow the heap to twice that data before a collection: a Parquet job,
// whose column chunks' dictionaries are garbage, peaked at 1.26x the
// resident memory of the same job from libFFM (8M samples), whose reader
// makes almost none; at 25 it peaked at 1.07x, 176 MiB less
// (BENCHMARKS.md, "Issue 53: the worker's collector at 25%").
const DefaultGCPercent = 25

// Flags are the worker's flags but the config's (config.Overrides).
type Flags struct {
	local, localGRPC              bool
	asJSON, printConfig, quiet    bool
	shards, stripes, index        int
	gcPercent                     int
	etcd, clusterName, configFile string
	events, rows                  string
	rowsTest                      bool
	profiles                      cli.Profiles
	proc                          cli.Proc
	leaseTTL                      time.Duration
}

// Bind defines the flags on fs.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "run an embedded cluster (etcd, AMS shards, scheduler) in this process; its snapshots and final model go to xps-models/JOB-ID unless -snapshot-store says where")
	fs.BoolVar(&f.localGRPC, "local-grpc", false, "with -local: pull and push over loopback gRPC like a separate process, instead of calling the embedded shards directly")
	fs.IntVar(&f.shards, "shards", 2, "AMS shards of the embedded cluster")
	fs.IntVar(&f.stripes, "stripes", 0, "stripe owners per AMS shard of the embedded cluster (default GOMAXPROCS/shards, at least 1)")
	fs.StringVar(&f.etcd, "etcd", "", "etcd endpoints of an external cluster, comma-separated host:port")
	fs.StringVar(&f.clusterName, "cluster", "default", "cluster name")
	fs.StringVar(&f.configFile, "config", "", "YAML model/training config file")
	fs.IntVar(&f.index, "worker-index", 0, "this worker's index in [0, workers)")
	fs.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object on the last line of stdout")
	fs.StringVar(&f.events, "events", "", `write the job's events (start, progress, end with the summary) as JSON lines to this file; "-": stdout, the summary's text then on stderr`)
	fs.StringVar(&f.rows, "rows", "", "train on the table \"train\" of the row service at this Unix socket (the Python package's Job.fit), its columns mapped by train.columns, instead of job.train's files")
	fs.BoolVar(&f.rowsTest, "rows-test", false, "with -rows: evaluate on the row service's table \"test\" instead of job.test's files")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the effective config as YAML and exit")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	f.proc.Bind(fs, "warn")
	f.profiles.Bind(fs)
	fs.IntVar(&f.gcPercent, "gc-percent", DefaultGCPercent, "the garbage collector's target percentage (debug.SetGCPercent; ignored when GOGC is set)")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", membership.DefaultTTL, "TTL of the worker's etcd lease: a worker silent this long is declared dead and the cluster rolls back")
}

// Run runs the worker's job as f and the config's sources say, fs being
// the flag set f was bound to (for its usage and the flags given).
func Run(ctx context.Context, fs *flag.FlagSet, f Flags, overrides *config.Overrides) (err error) {
	sources := []config.Source{config.File(f.configFile), overrides}
	cfg, err := config.Build(sources...)
	if err != nil {
		return err
	}
	if f.printConfig {
		return cfg.Write(os.Stdout)
	}
	out, events, closeEvents, err := f.openEvents()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeEvents()) }()
	if f.local { // the status page on a free loopback port, unless -http says otherwise
		f.proc.DefaultHTTP(fs, "127.0.0.1:0")
	}
	if err := f.proc.Start(os.Stderr, "worker", fmt.Sprintf("worker-%d", f.index)); err != nil {
		return err
	}
	defer f.proc.Close()
	cli.SetGCPercent(f.gcPercent)
	log := f.proc.Log
	stopProfiles, err := f.profiles.Start()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProfiles()) }()
	if f.local == (f.etcd != "") {
		fs.Usage()
		return errors.New("give exactly one of -local and -etcd")
	}
	var progress io.Writer = os.Stderr
	if f.quiet {
		progress = nil
	}
	prefix, err := membership.Prefix(f.clusterName)
	if err != nil {
		return err
	}
	cfg, tuned, err := xps.Tune(ctx, cfg, f.local, autotune.Options{Sources: sources, Progress: progress, Logger: log,
		Cluster: cluster.Options{Shards: f.shards, Stripes: f.stripes}, ModelRoot: modelRoot})
	if err != nil {
		return events.end(nil, err)
	}
	opts := job.Options{Config: cfg, Prefix: prefix, Index: f.index, Progress: progress, Logger: log, LeaseTTL: f.leaseTTL}
	opts.OnProgress = f.onProgress(events)
	if err := f.rowService(&opts); err != nil {
		return events.end(nil, err)
	}
	closeCluster, endpoints, err := f.connect(ctx, &opts)
	if err != nil {
		return events.end(nil, err)
	}
	defer closeCluster()
	events.start(f.statusURL(), endpoints, f.clusterName)
	f.proc.ReadyUntil(ctx)
	res, err := xps.Train(ctx, opts)
	res.Autotune = tuned
	events.end(&res, err)
	return res.Report(err, f.asJSON, out, os.Stderr)
}

// rowService sets opts' training data (and with -rows-test its test
// data) to the row service of -rows: a worker of several reads its part
// of the rows.
func (f *Flags) rowService(opts *job.Options) error {
	cfg := opts.Config
	switch {
	case f.rows == "" && f.rowsTest:
		return errors.New("-rows-test needs -rows")
	case f.rows == "":
		return nil
	case len(cfg.Job.Train) > 0:
		return fmt.Errorf("-rows is the training data: give no job.train (it is %s)", strings.Join(cfg.Job.Train, ","))
	case f.rowsTest && len(cfg.Job.Test) > 0:
		return fmt.Errorf("-rows-test is the test data: give no job.test (it is %s)", strings.Join(cfg.Job.Test, ","))
	case cfg.Train.Autotune:
		return errors.New("-rows: train.autotune reads files: give the data as files (or train without autotune)")
	case len(cfg.Train.Columns.Fields) == 0:
		return errors.New("-rows needs train.columns: the label column and the fields' columns")
	}
	policy, err := reader.ParseErrorPolicy(cfg.Train.OnError)
	if err != nil {
		return err
	}
	open := func(table string, at reader.Position, part, parts int) (reader.Source, error) {
		return rowsrc.NewSource(rowsrc.Options{Addr: f.rows, Table: table, Columns: cfg.Train.Columns,
			Namespace: cfg.Model.Sequence.Namespace(0), OnError: policy, Start: at, Part: part, Parts: parts})
	}
	opts.Source = func(_ int, at reader.Position) (reader.Source, error) {
		return open("train", at, f.index, max(cfg.Job.Workers, 1))
	}
	if f.rowsTest {
		opts.TestSource = func() (reader.Source, error) { return open("test", reader.Position{}, 0, 1) }
	}
	return nil
}

// statusURL is the status page's URL, "" without one (it is -local's).
func (f *Flags) statusURL() string {
	if a := f.proc.OpsAddr(); a != "" && f.local {
		return "http://" + a + "/"
	}
	return ""
}

// onProgress returns the job's Options.OnProgress: the worker's metrics
// (with -http) and the events (with -events), nil with neither.
func (f *Flags) onProgress(ev eventsOut) func(job.Progress) {
	var metrics func(job.Progress)
	if m := f.proc.Metrics(); m != nil {
		metrics = ctrtrain.ProgressMetrics(m)
	}
	switch {
	case ev.Events == nil:
		return metrics
	case metrics == nil:
		return ev.Progress
	}
	return func(p job.Progress) { metrics(p); ev.Progress(p) }
}

// eventsOut is the -events stream, whose methods do nothing without it.
type eventsOut struct{ *job.Events }

func (e eventsOut) start(url, etcd, cluster string) {
	if e.Events != nil {
		e.Start(job.Started{StatusPage: url, Etcd: etcd, Cluster: cluster})
	}
}

// end writes the end event and returns err.
func (e eventsOut) end(res *xps.Result, err error) error {
	if e.Events != nil {
		var r any
		if res != nil && res.Summary() != nil {
			r = res
		}
		e.End(r, err)
	}
	return err
}

// openEvents opens -events: the writer of the summary (stdout, or stderr
// when the events take stdout), the events and the func that closes them.
func (f *Flags) openEvents() (out io.Writer, ev eventsOut, closeEvents func() error, err error) {
	switch f.events {
	case "":
		return os.Stdout, eventsOut{}, func() error { return nil }, nil
	case "-":
		return os.Stderr, eventsOut{job.NewEvents(os.Stdout)}, func() error { return nil }, nil
	}
	w, err := os.Create(f.events)
	if err != nil {
		return nil, eventsOut{}, nil, fmt.Errorf("-events: %w", err)
	}
	return os.Stdout, eventsOut{job.NewEvents(w)}, w.Close, nil
}

// connect starts the embedded cluster (-local) or dials etcd (-etcd) and
// sets opts' etcd client and local shards; it returns the func that
// closes them and the etcd endpoints, comma-separated.
func (f *Flags) connect(ctx context.Context, opts *job.Options) (func(), string, error) {
	if !f.local {
		cl, err := membership.Dial(ctx, cli.Endpoints(f.etcd), opts.Logger, membership.WithTLS(f.proc.TLS.Client()))
		if err != nil {
			return nil, "", err
		}
		opts.Etcd, opts.TLS = cl, f.proc.TLS
		return func() { cl.Close() }, f.etcd, nil
	}
	if f.proc.TLS != nil {
		return nil, "", errors.New("-local runs without TLS: -tls-ca, -tls-cert and -tls-key are for a worker joining a cluster (-etcd)")
	}
	lc, err := cluster.StartFor(ctx, cluster.Options{Shards: f.shards, Stripes: f.stripes, Metrics: f.proc.Metrics(), ModelRoot: modelRoot}, opts, !f.localGRPC)
	if err != nil {
		return nil, "", err
	}
	f.proc.ServeStatus(lc.StatusHandler(), os.Stderr)
	return func() { lc.Close() }, strings.Join(lc.Endpoints(), ","), nil
}
