package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// BindFlags defines on fs the flags of the scheduler binary that set o:
// -id (ID), -shards (Shards, 2 unless given), -partitions (Partitions),
// -lease-ttl (LeaseTTL), -rejoin-wait (RejoinWait) and
// -stop-snapshot-timeout (StopSnapshotTimeout).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ID, "id", "", "member id of this scheduler (default <hostname>-<pid>)")
	fs.IntVar(&o.Shards, "shards", 2, "number of AMS shards the cluster forms with")
	fs.IntVar(&o.Partitions, "partitions", ams.DefaultPartitions, "number of virtual partitions")
	fs.DurationVar(&o.LeaseTTL, "lease-ttl", membership.DefaultTTL, "TTL of the scheduler's etcd lease")
	fs.DurationVar(&o.StopSnapshotTimeout, "stop-snapshot-timeout", DefaultStopSnapshotTimeout,
		"when stopped (SIGTERM, Ctrl-C) while it leads a serving cluster with a snapshot store, take a snapshot first, within this bound (the model since the last snapshot is kept); negative: take none")
	fs.DurationVar(&o.RejoinWait, "rejoin-wait", DefaultRejoinWait,
		"how long a shard or worker whose lease expired is waited for to register again in the same process (the cluster paused, then serving on at the same version) before restoring; negative: restore at once")
}

// RequestNow is the scheduler binary's -snapshot-now (-export-now with
// export): it asks the running scheduler of the cluster under prefix for a
// snapshot (controlplane.RequestSnapshot) or a model export
// (controlplane.RequestExport), waits for it and writes its result to w as
// one line of JSON. A failed attempt is returned as an error.
func RequestNow(ctx context.Context, cli *clientv3.Client, prefix string, export bool, w io.Writer) error {
	conn, err := controlplane.New(cli, prefix)
	if err != nil {
		return err
	}
	var res any
	if export {
		res, err = conn.RequestExport(ctx)
	} else {
		res, err = conn.RequestSnapshot(ctx, false)
	}
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(w, string(b))
	return nil
}

// Host is the process a scheduler runs in, as Serve uses it: the
// operations endpoint's address, status page, metrics and readiness, and
// the logger's cluster version (cmd/scheduler's cli.Proc is one).
type Host interface {
	// OpsAddr is the operations endpoint's address, "" when there is none.
	OpsAddr() string
	// ServeStatus serves h as the status page (w: where to say so, nil
	// for the logger).
	ServeStatus(h http.Handler, w io.Writer)
	// SetVersion adds v() to every log line.
	SetVersion(v func() uint64)
	// Metrics is the registry of the endpoint's metrics, nil without one.
	Metrics() prometheus.Registerer
	// Ready and NotReady set the endpoint's readiness.
	Ready()
	NotReady(reason string)
}

// Serve runs a scheduler until ctx ends (a signal: it leaves the cluster
// cleanly) or it stops on its own. host's operations endpoint, when there
// is one, reports it ready while it runs and serves its status page
// (StatusHandler), whose address the scheduler advertises in its member
// record unless opts.Addr is set.
func Serve(ctx context.Context, etcd *clientv3.Client, opts Options, host Host) error {
	if opts.Addr == "" {
		opts.Addr = host.OpsAddr()
	}
	s, err := New(etcd, opts)
	if err != nil {
		return err
	}
	host.ServeStatus(s.StatusHandler(), nil)
	host.SetVersion(func() uint64 { return s.Status().Version }) // on every log line while it leads
	if m := host.Metrics(); m != nil {
		m.MustRegister(s.Collector())
	}
	host.Ready()
	select {
	case <-ctx.Done():
		host.NotReady("shutting down")
		if err := saveOnStop(ctx, s, opts.Logger); err != nil {
			return errors.Join(err, s.Close())
		}
		opts.Logger.Info("shutting down")
	case <-s.Done():
		host.NotReady("stopped")
	}
	return s.Close()
}

// saveOnStop takes the stop's snapshot (Scheduler.SaveOnStop) and says
// what it did; a failure is said loudly and returned, so that the
// scheduler exits non-zero.
func saveOnStop(ctx context.Context, s *Scheduler, log *slog.Logger) error {
	r, taken, err := s.SaveOnStop(ctx)
	switch {
	case err != nil:
		log.Error("the model is NOT saved: the stop's snapshot failed; the model since the last snapshot is lost when the shards stop", "err", err)
		return err
	case taken:
		log.Info("saved the model on stop", "snapshot", r.Seq, "rows", r.Rows, "samples_applied", r.Applied, "store", s.opts.Config.Snapshot.Store)
	case r.Seq > 0:
		log.Info("the model is saved already: nothing applied since the last snapshot", "snapshot", r.Seq, "store", s.opts.Config.Snapshot.Store)
	}
	return nil
}
