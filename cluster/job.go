package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xdlgo/xps/job"
)

// StartFor starts a cluster for the job of opts, run in this process
// (`worker -local`): o's prefix, logger and config are the job's, and the
// job's Progress writer (when set) is told what starts. It then points
// opts at the cluster: its etcd client, and, when direct, its shards'
// services for direct calls (opts.Local). With o.ModelRoot set, a job
// without a snapshot store is given one of its own there (its config
// changed in opts and o alike). The job saves its model when stopped
// (job.Options.SaveOnStop), since the model ends with the process. The
// caller closes the cluster after the job.
func StartFor(ctx context.Context, o Options, opts *job.Options, direct bool) (*Cluster, error) {
	if o.ModelRoot != "" && opts.Config.Snapshot.Store == "" {
		if err := opts.Config.KeepModelIn(o.ModelRoot, time.Now()); err != nil {
			return nil, err
		}
		removed, err := pruneModels(opts.Config.Snapshot.Store)
		if err != nil {
			return nil, err
		}
		if len(removed) > 0 && opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "removed the %d oldest models from %s (it keeps the last %d jobs')\n", len(removed), o.ModelRoot, KeptModels)
		}
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

// KeptModels is how many jobs' models Options.ModelRoot keeps.
const KeptModels = 5

// pruneModels removes from the directory above dir (a job's model under
// Options.ModelRoot) the models of all but the newest KeptModels jobs, dir
// counted, so that runs repeated for days do not fill the disk. It
// removes only directories named as config.NewJobID names jobs, and
// returns their paths.
func pruneModels(dir string) (removed []string, err error) {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "job-????????-??????-*"))
	old = slices.DeleteFunc(old, func(p string) bool { return p == dir })
	slices.Sort(old) // by time: the ids start with it
	for _, p := range old[:max(0, len(old)-(KeptModels-1))] {
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("cluster: removing an old model: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}
