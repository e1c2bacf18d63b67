// Command scheduler runs the scheduler of an xps cluster: it registers in
// etcd, watches the AMS shards, workers and other schedulers, publishes the
// shard map once the expected shards have joined, and reports lease expiries
// (see package internal/scheduler).
//
// Usage:
//
//	scheduler -etcd host:port[,host:port...] [flags]
//
// Flags:
//
//	-etcd host:port[,...]  etcd client endpoints. Required.
//	-cluster name          cluster name; keys live under /xps/<name>.
//	                       Default "default".
//	-id id                 this scheduler's member id. Default
//	                       "<hostname>-<pid>".
//	-shards N              number of AMS shards the cluster forms with.
//	                       Default 2.
//	-partitions P          number of virtual partitions, fixed for the life
//	                       of a model. Default 4096.
//	-lease-ttl d           TTL of the scheduler's lease. Default 5s.
//	-log-level level       debug, info, warn or error. Default info.
//	-config file           the job's YAML config (the one the workers read):
//	                       the scheduler reads its job section (train,
//	                       workers, split_bytes), snapshot section (store,
//	                       every, every_samples, keep), kafka section and
//	                       train.format. Default: the defaults.
//	-set path=value        set a key of those sections, as in the file
//	                       (repeatable), e.g. -set snapshot.keep=5.
//	-train paths           job.train: training files, directories or globs
//	                       (comma-separated) to divide among the workers; each
//	                       worker-<i> finds its share under
//	                       /xps/<name>/assign/worker-<i>. Default none.
//	-workers W             job.workers sharing -train. Default 1.
//	-split-bytes N         job.split_bytes: files larger than a worker's share
//	                       are cut into byte ranges of about N bytes. Default
//	                       64 MiB.
//	-format f              train.format of -train; xml files are never cut.
//	                       Default libffm.
//	-kafka brokers         kafka.brokers, with -topic: deal the topic's
//	-topic name            partitions to the live workers (under
//	                       /xps/<name>/partitions), anew whenever a worker
//	                       joins or leaves. Default none.
//	-snapshot-store loc    snapshot.store: where snapshots go, a directory
//	                       every shard can reach, or hdfs://NAMENODE:PORT/PATH.
//	                       Default none.
//	-snapshot-every d      snapshot.every: take a consistent snapshot every d
//	                       (workers pause at a batch boundary). Default 10m;
//	                       negative: on request only.
//	-snapshot-every-samples N
//	                       snapshot.every_samples: also take one once the
//	                       workers' checkpoints in the model count N more
//	                       samples applied. Default 0: off.
//	-snapshot-keep K       snapshot.keep: complete snapshots to keep. Default 3.
//	-snapshot-now          instead of running a scheduler, ask the running
//	                       one for a snapshot, wait and print its result.
//
// Several schedulers may run on one cluster: they hold an etcd election
// (under /xps/<name>/leader) and only the leader drives the cluster; a
// standby takes over when the leader stops or its lease expires, resuming
// from etcd.
//
// SIGINT or SIGTERM stops the scheduler gracefully: it leaves the cluster
// (writing its left marker) and exits 0. It exits 1 if it cannot start or if
// its lease is lost.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/internal/scheduler"
	"github.com/xdlgo/xps/reader"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
}

// run runs the scheduler until ctx ends (a signal) or it stops on its own.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		endpoints = fs.String("etcd", "", "etcd client endpoints, host:port[,host:port] (required)")
		name      = fs.String("cluster", "default", "cluster name; keys live under /xps/<name>")
		id        = fs.String("id", "", "member id of this scheduler (default <hostname>-<pid>)")
		shards    = fs.Int("shards", 2, "number of AMS shards the cluster forms with")
		parts     = fs.Int("partitions", ams.DefaultPartitions, "number of virtual partitions")
		ttl       = fs.Duration("lease-ttl", membership.DefaultTTL, "TTL of the scheduler's etcd lease")
		level     = fs.String("log-level", "info", "log level: debug, info, warn or error")
		cfgFile   = fs.String("config", "", "the job's YAML config; the scheduler reads its job, snapshot and kafka sections and train.format")
		snapNow   = fs.Bool("snapshot-now", false, "do not run a scheduler: ask the cluster's running scheduler for a snapshot, wait for it and print the result")
		overrides config.Overrides
	)
	overrides.Bind(fs, "job", "snapshot", "kafka", "train.format")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadWith(*cfgFile, &overrides)
	if err != nil {
		return err
	}
	if *endpoints == "" {
		fs.Usage()
		return errors.New("-etcd is required")
	}
	f, err := reader.ParseFormat(cfg.Train.Format)
	if err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	prefix, err := membership.Prefix(*name)
	if err != nil {
		return fmt.Errorf("-cluster: %w", err)
	}

	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cli, err := membership.Dial(dctx, strings.Split(*endpoints, ","), log)
	cancel()
	if err != nil {
		return err
	}
	defer cli.Close()
	if *snapNow {
		conn, err := controlplane.New(cli, prefix)
		if err != nil {
			return err
		}
		res, err := conn.RequestSnapshot(ctx)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(res)
		fmt.Fprintln(stderr, string(b))
		return nil
	}

	s, err := scheduler.New(cli, scheduler.Options{Snapshot: cfg.Snapshot,
		Prefix: prefix, ID: *id, Shards: *shards, Partitions: *parts, LeaseTTL: *ttl, Logger: log,
		Train: cfg.Job.Train, Workers: cfg.Job.Workers, SplitBytes: cfg.Job.SplitBytes, Unsplittable: f == reader.XML,
		KafkaBrokers: cfg.Kafka.Brokers, KafkaTopic: cfg.Kafka.Topic,
	})
	if err != nil {
		return err
	}
	log.Info("scheduler started", "etcd", *endpoints, "prefix", prefix, "shards", *shards, "partitions", *parts)
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case <-s.Done():
	}
	return s.Close()
}
