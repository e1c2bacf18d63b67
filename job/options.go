package job

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/reader"
)

// Options configure a worker's job, for every model. The job's data,
// workers and model come from Config (its job and model sections).
type Options struct {
	// Config is the job's configuration. Required. A Config from
	// config.Build (a command line's) is taken as it is; one made in Go,
	// whose zero fields mean their defaults, Run builds (config.Build:
	// defaults, then one validation).
	Config config.Config
	// Etcd is the etcd client the worker registers with and finds the
	// shard map through. Required.
	Etcd *clientv3.Client
	// Prefix is the cluster's etcd key prefix. The default value is
	// membership.DefaultPrefix.
	Prefix string
	// Index is this worker's index in [0, Config.Job.Workers).
	Index int
	// Source, when set, is the training data instead of Config.Job.Train
	// (files) or the generated dataset: it opens the samples of an epoch
	// (1-based) at a position (the zero Position: the beginning; else a
	// position the job saw in a Group's Pos and stored in the model). Its
	// groups must carry Pos and Next (reader.Group): the model stores Next
	// to resume from, so a group without it stops the job. The CTR model
	// reads it; the SLIDE model takes files only.
	Source func(epoch int, at reader.Position) (reader.Source, error)
	// TestSource, when set, opens the test data instead of
	// Config.Job.Test; it is read into memory once.
	TestSource func() (reader.Source, error)
	// FS is the file system the data files are on. The default value (nil)
	// is the one their names are on (hdfssrc.ForPaths).
	FS reader.FS
	// LeaseTTL is the worker's registration lease TTL. The default value
	// is membership.DefaultTTL.
	LeaseTTL time.Duration
	// Progress receives progress lines. The default value (nil) prints
	// none.
	Progress io.Writer
	// OnProgress, when set, receives the figures of every progress line
	// and evaluation (a metrics exporter), on the training goroutine: it
	// must return quickly. Run publishes every report to etcd for the
	// schedulers' status pages either way. The default value is nil.
	OnProgress func(Progress)
	// Logger receives structured logs. The default value discards them.
	Logger *slog.Logger
	// Local resolves the shards that serve in this process (an embedded
	// cluster): pulls and pushes to them are direct calls of their
	// service instead of loopback gRPC. The default value (nil) sends
	// everything through gRPC.
	Local client.Resolver
	// TLS, when set, is the worker's identity (a certificate of the
	// worker role, package cluster/tlsconf): its gRPC connections to the
	// shards, and a SLIDE job's connections between workers, speak mutual
	// TLS instead of plaintext. The etcd client (Etcd) is the caller's
	// and carries its own. The default value (nil) speaks plaintext.
	TLS *tlsconf.Config
	// SaveOnStop is set when the cluster stops with the job (`worker
	// -local`: its model lives in this process): an orderly stop of the
	// job (its ctx cancelled: Ctrl-C, SIGTERM) then saves the model, as
	// the end of a job does (Env.SaveModel), with what was trained up to
	// the stop and the checkpoint naming it, before Run returns, within
	// StopSaveTimeout; a failed save is Run's error. A worker of a
	// cluster that goes on without it leaves the model to the scheduler
	// (which saves it when stopped itself). The default value is false.
	SaveOnStop bool
}

// Workers returns the number of workers of the job (at least 1).
func (o *Options) Workers() int { return max(o.Config.Job.Workers, 1) }

// withDefaults fills the defaults and checks what has none.
func (o Options) withDefaults() (Options, error) {
	if o.Etcd == nil {
		return o, fmt.Errorf("job: an etcd client is required")
	}
	if o.Prefix == "" {
		o.Prefix = membership.DefaultPrefix
	}
	if !o.Config.Built() {
		cfg, err := config.Build(o.Config)
		if err != nil {
			return o, fmt.Errorf("job: %w", err)
		}
		o.Config = cfg
	}
	if o.Index < 0 || o.Index >= o.Workers() {
		return o, fmt.Errorf("job: worker index %d is not in [0, %d) (job.workers)", o.Index, o.Workers())
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = membership.DefaultTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
