package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/xdlgo/xps/job"
)

// StartFor starts a cluster for the job of opts, run in this process
// (`worker -local`): o's prefix, logger and config are the job's, and the
// job's Progress writer (when set) is told what starts. It then points
// opts at the cluster: its etcd client, and, when direct, its shards'
// services for direct calls (opts.Local). With o.ModelRoot set, a job
// without a snapshot store is given one of its own there (its config
// changed in opts and o alike), and Close keeps the directory's newest
// KeptModels trained models (modelRoot.keep). The job saves its model when stopped
// (job.Options.SaveOnStop), since the model ends with the process. The
// caller closes the cluster after the job.
func StartFor(ctx context.Context, o Options, opts *job.Options, direct bool) (*Cluster, error) {
	var models *modelRoot
	if o.ModelRoot != "" && opts.Config.Snapshot.Store == "" {
		if err := opts.Config.KeepModelIn(o.ModelRoot, time.Now()); err != nil {
			return nil, err
		}
		models = &modelRoot{root: o.ModelRoot, dir: opts.Config.Snapshot.Store, progress: opts.Progress}
	}
	o.Prefix, o.Logger, o.Config = opts.Prefix, opts.Logger, opts.Config
	if o.Shards <= 0 {
		o.Shards = 2
	}
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "starting embedded cluster: etcd, %d AMS shards, scheduler\n", o.Shards)
	}
	c, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	c.models = models // kept by Close
	opts.Etcd, opts.Prefix = c.Etcd(), c.Prefix()
	opts.SaveOnStop = true // the model lives in this process: a stop saves it
	if direct {
		opts.Local = c
	}
	return c, nil
}

// StatusHandler serves the status page of the cluster's scheduler: GET /
// an HTML page (cluster state and version, members and their heartbeats,
// the workers' throughput, loss and AUC curves as inline SVG, snapshots,
// exports, Kafka lag; no script, it reloads itself), GET /status.json the
// same figures as JSON. Register it for both paths.
func (c *Cluster) StatusHandler() http.Handler { return c.sched.StatusHandler() }
