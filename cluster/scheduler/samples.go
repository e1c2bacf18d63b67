package scheduler

import (
	"context"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/job/checkpoint"
)

// sampleCount is the state of snapshots every N samples
// (Options.Snapshot.EverySamples), owned by the run goroutine.
type sampleCount struct {
	cl      *client.Client // for the version below
	version uint64
	base    int64 // the samples applied of the last snapshot, or when counting started
	known   bool  // base was read
	// expBase is base for exports (Export.EverySamples).
	expBase  int64
	expKnown bool
}

// close releases the client.
func (c *sampleCount) close() {
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
}

// checkSamples asks for a snapshot when the workers' checkpoints count at
// least Snapshot.EverySamples more samples applied than the base: the
// samples applied that the last snapshot holds (snapshotTaken), or, before
// any, the count when the last snapshot was asked for or first read. So
// the samples applied of two snapshots are at least EverySamples apart,
// however long a snapshot takes to pause the workers (called on ticks
// while no snapshot runs).
func (s *Scheduler) checkSamples(ctx context.Context) {
	n, ne := s.opts.Config.Snapshot.EverySamples, s.opts.Config.Export.EverySamples
	if n <= 0 && ne <= 0 || s.fsm == nil || s.snap != nil || s.exp != nil {
		return
	}
	st := s.fsm.State()
	if st.Phase != clusterfsm.Serving {
		return
	}
	c := &s.samples
	if c.cl == nil || c.version != st.Version {
		c.close()
		m := s.maps[st.Version]
		if m == nil {
			return
		}
		cl, err := s.newClient(m)
		if err != nil {
			s.log.Warn("counting samples: no client", "err", err)
			return
		}
		c.cl, c.version = cl, st.Version
	}
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	entries, err := c.cl.GetState(cctx, ams.StateReaderPrefix)
	if err != nil {
		return
	}
	applied := checkpoint.Applied(entries)
	if n > 0 && due(&c.base, &c.known, applied, n) {
		s.log.Info("snapshot every samples", "applied", applied)
		s.requestSnapshot(ctx, false)
		return // one cut at a time: an export due waits for the next tick
	}
	if ne > 0 && due(&c.expBase, &c.expKnown, applied, ne) {
		s.log.Debug("export every samples", "applied", applied)
		s.requestExport(ctx)
	}
}

// due reports whether applied is at least n above *base, which it then
// moves to applied; the first count, or one below the base (a rollback),
// only sets the base.
func due(base *int64, known *bool, applied, n int64) bool {
	if !*known || applied < *base {
		*base, *known = applied, true
		return false
	}
	if applied-*base < n {
		return false
	}
	*base = applied
	return true
}

// snapshotTaken counts the next snapshot by samples from the samples
// applied that a snapshot just written holds.
func (c *sampleCount) snapshotTaken(applied int64) {
	c.base, c.known = applied, true
}
