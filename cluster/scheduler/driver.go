package scheduler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/snapshot"
)

// ErrNoSnapshotStore is the error of a snapshot asked of a scheduler
// without a snapshot store.
var ErrNoSnapshotStore = errors.New("scheduler: no snapshot store (start the scheduler with -snapshot-store)")

// opDone is what a background operation reports to the run goroutine.
type opDone struct {
	ev     clusterfsm.Event
	snap   *controlplane.SnapshotResult // for a snapshot
	exp    *controlplane.ExportResult   // for an export
	expMan *export.Manifest             // the export written
	// keys are the state keys of the model a successful snapshot wrote or
	// a successful restore loaded (see Scheduler.modelKeys).
	keys []string
}

// snapOp is the snapshot in progress.
type snapOp struct {
	id       clusterfsm.SnapshotID
	pauseSeq uint64
	version  uint64
	pin      bool // a pinned snapshot (snapshot.Manifest.Pinned)
	cancel   context.CancelFunc
}

// newCore builds the state machine from what etcd and the snapshot store
// hold: the snapshots to fall back to, the last version, and the map a
// previous leader published (adopted if the cluster still serves it).
func (s *Scheduler) newCore(ctx context.Context) error {
	s.chain = s.loadExportChain()
	o := clusterfsm.Options{Shards: s.opts.Shards, SnapshotEvery: s.opts.Config.Snapshot.Periodic(), Keep: s.opts.Config.Snapshot.Keep,
		ExportEvery:         s.opts.Config.Export.Periodic(),
		SkipInitialSnapshot: s.opts.Config.Snapshot.Store == "", RejoinWait: max(s.opts.RejoinWait, 0)}
	if s.opts.Config.Snapshot.Store != "" {
		store, err := snapshot.OpenStore(s.opts.Config.Snapshot.Store, "")
		if err != nil {
			return fmt.Errorf("scheduler: snapshot store: %w", err)
		}
		// Attempts that failed, or that a leader gone abandoned, are no
		// snapshots: remove their files (their seqs are not used again).
		removed, err := snapshot.RemoveIncomplete(store)
		if len(removed) > 0 {
			s.log.Info("removed incomplete snapshots", "seqs", removed)
		}
		if err != nil {
			s.log.Warn("removing incomplete snapshots", "err", err)
		}
		for _, seq := range removed {
			o.LastSnapshot = max(o.LastSnapshot, clusterfsm.SnapshotID(seq))
		}
		seqs, err := snapshot.Snapshots(store)
		jobs := map[uint64]string{} // the job of each readable snapshot
		if err == nil {
			for _, seq := range seqs {
				o.LastSnapshot = max(o.LastSnapshot, clusterfsm.SnapshotID(seq))
				if m, rerr := snapshot.ReadManifest(store, seq); rerr == nil {
					o.Snapshots = append(o.Snapshots, clusterfsm.SnapshotID(seq))
					jobs[seq] = m.Job
					if m.Pinned {
						o.Pinned = max(o.Pinned, clusterfsm.SnapshotID(seq))
					}
				}
			}
		}
		store.Close()
		if err != nil {
			return fmt.Errorf("scheduler: snapshot store: %w", err)
		}
		if err := s.claimJob(ctx, jobs); err != nil {
			return err
		}
	} else if err := s.claimJob(ctx, nil); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := s.conn.ClearFailed(gctx); err != nil { // this leader tries again
		return fmt.Errorf("scheduler: %w", err)
	}
	m, rev, err := s.conn.LatestShardMap(gctx)
	if err != nil {
		return fmt.Errorf("scheduler: the published shard map: %w", err)
	}
	if m != nil {
		o.LastVersion = m.Version
		s.maps[m.Version] = m
		if len(m.Shards) == s.opts.Shards {
			st, _, _ := s.conn.GetClusterState(gctx) // none, or unreadable: not known to serve
			o.Adopt = &clusterfsm.Adopted{Version: m.Version, Shards: m.Shards, MaxIncarnation: rev,
				Serving: st.Version == m.Version && (st.Phase == clusterfsm.Serving.String() ||
					st.Phase == clusterfsm.Degraded.String() && st.Waiting), // intact but for lives waited for
				Stopped: st.Version == m.Version && st.Phase == clusterfsm.Stopped.String(),
				Lives:   st.Lives}
		}
	}
	if seq, err := s.conn.LastPause(gctx); err == nil {
		s.pauseSeq = seq
	}
	core, err := clusterfsm.New(o)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	s.fsm = core
	s.log.Info("cluster state machine ready", "last_version", o.LastVersion, "snapshots", o.Snapshots,
		"adopting", o.Adopt != nil)
	return nil
}

// memberJoined records a member's registration and feeds it to the core.
func (s *Scheduler) memberJoined(ctx context.Context, t tracked) {
	m := t.member
	s.log.Info("member joined", "member", m.String(), "addr", m.Addr, "pid", m.PID)
	s.putEvent(ctx, controlplane.Event{Type: controlplane.EventJoined, Member: &m})
	s.step(ctx, clusterfsm.Joined{Member: fsmMember(t)})
}

// memberLeft records a member's end and feeds it to the core.
func (s *Scheduler) memberLeft(ctx context.Context, t tracked, graceful bool) {
	m := t.member
	typ := controlplane.EventLeft
	if graceful {
		s.log.Info("member left", "member", m.String(), "addr", m.Addr, "pid", m.PID)
	} else {
		typ = controlplane.EventLeaseExpired
		s.log.Warn("member lease expired", "member", m.String(), "addr", m.Addr, "pid", m.PID)
	}
	s.putEvent(ctx, controlplane.Event{Type: typ, Member: &m})
	s.step(ctx, clusterfsm.Left{Member: fsmMember(t), Graceful: graceful})
}

func fsmMember(t tracked) clusterfsm.Member {
	return clusterfsm.Member{Kind: clusterfsm.Kind(t.member.Kind), ID: t.member.ID, Incarnation: t.createRev, Life: t.member.Life()}
}

// recordState records st as the cluster state, with the lives of the
// current map's shards and of the live workers (a leader that takes over
// waits for those not live then).
func (s *Scheduler) recordState(ctx context.Context, st clusterfsm.State) {
	rec := controlplane.ClusterState{Phase: st.Phase.String(), Version: st.Version, Time: time.Now().UTC(), Lives: map[string]string{}}
	keys := make([]string, 0)
	for _, id := range s.fsm.Slots() {
		keys = append(keys, membership.KindAMS+"/"+id)
	}
	for _, m := range s.fsm.Members(clusterfsm.KindWorker) {
		keys = append(keys, membership.KindWorker+"/"+m.ID)
	}
	for _, k := range keys {
		if t, ok := s.members[k]; ok && t.member.Life() != "" {
			rec.Lives[k] = t.member.Life()
		}
	}
	away := s.fsm.Away() // not live: the lives waited for
	maps.Copy(rec.Lives, away)
	rec.Waiting = st.Phase == clusterfsm.Degraded && len(away) > 0
	s.retry(ctx, "record the cluster state", func(ctx context.Context) error {
		return s.conn.PutClusterState(ctx, rec)
	})
}

// step feeds the core one event and carries out its actions in order.
func (s *Scheduler) step(ctx context.Context, ev clusterfsm.Event) error {
	if s.fsm == nil {
		return nil
	}
	out := s.fsm.Step(ev)
	if out.Rejected != nil {
		if _, tick := ev.(clusterfsm.Tick); !tick && !errors.Is(out.Rejected, clusterfsm.ErrStale) {
			s.log.Info("event changed nothing", "event", ev.String(), "why", out.Rejected)
		}
		return out.Rejected
	}
	for _, a := range out.Actions {
		s.do(ctx, a)
	}
	return nil
}

// do carries out one action of the core.
func (s *Scheduler) do(ctx context.Context, a clusterfsm.Action) {
	switch a := a.(type) {
	case clusterfsm.Transition:
		s.log.Info("cluster state changed", "from", a.From.String(), "to", a.To.String(), "cause", a.Cause)
		s.putEvent(ctx, controlplane.Event{Type: controlplane.EventState, State: a.To.Phase.String(), Version: a.To.Version,
			Detail: fmt.Sprintf("%s -> %s (%s)", a.From, a.To, a.Cause)})
		s.recordState(ctx, a.To)
		// Status reports the state once it is recorded: a scheduler that
		// stops as soon as it reports SERVING leaves SERVING recorded for
		// the next leader to adopt.
		s.mu.Lock()
		s.mu.state, s.mu.since = a.To, time.Now()
		s.mu.Unlock()
		s.rolledBack(ctx, a.To)
	case clusterfsm.PublishShardMap:
		addrs := make([]string, len(a.Shards))
		for i, id := range a.Shards {
			addrs[i] = s.members[membership.KindAMS+"/"+id].member.Addr
		}
		m, err := ams.NewShardMap(a.Version, s.opts.Partitions, a.Shards, addrs)
		if err != nil { // the core lists distinct live shards: a bug
			s.log.Error("building the shard map failed", "version", a.Version, "err", err)
			return
		}
		s.maps[a.Version] = m
		s.pending = m
		s.publishPending(ctx)
	case clusterfsm.PauseWorkers:
		s.pauseSeq++
		seq := s.pauseSeq
		s.retry(ctx, "ask the workers to pause", func(ctx context.Context) error {
			return s.conn.PutPause(ctx, seq)
		})
	case clusterfsm.TakeSnapshot:
		s.startSnapshot(ctx, a)
	case clusterfsm.AbortSnapshot:
		if s.snap != nil && s.snap.id == a.ID {
			s.snap.cancel()
		}
	case clusterfsm.TakeExport:
		s.startExport(ctx, a)
	case clusterfsm.AbortExport:
		if s.exp != nil && s.exp.id == a.ID {
			s.exp.cancel()
		}
	case clusterfsm.Restore:
		s.restoring = a.Snapshot
		s.startRestore(ctx, a)
	case clusterfsm.AssignReaders:
		// Files stay with the worker of their index (a restarted worker
		// takes its share back); Kafka partitions are dealt among the
		// live workers whenever they change (dealPartitions). Both
		// resume from the positions in the restored model.
		s.deal.dirty = s.deal.partitions > 0
		s.log.Info("readers assigned", "version", a.Version, "workers", a.Workers)
		s.recordState(ctx, s.fsm.State()) // the lives of the workers dealt
	case clusterfsm.Resume:
		seq := s.pauseSeq
		s.retry(ctx, "resume the workers", func(ctx context.Context) error {
			return s.conn.PutResume(ctx, seq, a.Version)
		})
		s.log.Info("workers resumed", "version", a.Version, "pause", seq)
	case clusterfsm.GiveUp:
		s.log.Error("the cluster cannot recover", "err", a.Err)
		s.retry(ctx, "tell the workers the cluster failed", func(ctx context.Context) error {
			return s.conn.PutFailed(ctx, a.Err.Error())
		})
	case clusterfsm.StartRollback, clusterfsm.Queued, clusterfsm.Refused:
		s.doRequest(ctx, a)
	}
}

// doRequest carries out an action about the requests for a snapshot, a
// rollback or an export: the core queues those that come during a cut
// and starts or refuses them once the driver settled its end.
func (s *Scheduler) doRequest(ctx context.Context, a clusterfsm.Action) {
	switch a := a.(type) {
	case clusterfsm.StartRollback:
		s.rb = &rollbackOp{want: a.To, request: s.lastRollbackRequest}
	case clusterfsm.Queued:
		s.log.Info("request queued until the cut in progress ends", "request", a.Request.String(), "pin", a.Pin)
	case clusterfsm.Refused:
		s.log.Info("queued request refused", "request", a.Request.String(), "why", a.Err)
		switch a.Request {
		case clusterfsm.SnapshotRequest:
			s.refuseSnapshot(ctx, a.Err)
		case clusterfsm.RollbackRequest:
			s.refuseRollback(ctx, a.Err)
		case clusterfsm.ExportRequest:
			s.refuseExport(ctx, a.Err)
		}
	}
}

// retry runs an etcd write until it succeeds or ctx ends (a few seconds
// of etcd trouble must not lose a pause or a resume).
func (s *Scheduler) retry(ctx context.Context, what string, fn func(context.Context) error) {
	wait := 100 * time.Millisecond
	for {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		err := fn(cctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		s.log.Warn("etcd write failed, retrying", "what", what, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}

// startSnapshot asks the workers to pause and starts the snapshot's
// goroutine: it waits for their acknowledgements, has every shard write
// its part, commits the manifest and prunes; finish resumes the workers.
func (s *Scheduler) startSnapshot(ctx context.Context, a clusterfsm.TakeSnapshot) {
	m := s.maps[a.Version]
	s.pauseSeq++
	op := &snapOp{id: a.ID, pauseSeq: s.pauseSeq, version: a.Version, pin: a.Pin}
	sctx, cancel := context.WithCancel(ctx)
	op.cancel = cancel
	s.snap = op
	s.retry(ctx, "ask the workers to pause", func(ctx context.Context) error {
		// Workers with state of their own write it into the snapshot
		// before they acknowledge: tell them which one, first.
		t := controlplane.SnapshotTarget{Pause: op.pauseSeq, Seq: uint64(op.id), Store: s.opts.Config.Snapshot.Store}
		if err := s.conn.PutSnapshotTarget(ctx, t); err != nil {
			return err
		}
		return s.conn.PutPause(ctx, op.pauseSeq)
	})
	workers := s.liveWorkers()
	require, request := slices.Clone(s.modelKeys), s.lastRequest
	s.opsWG.Add(1)
	go func() {
		defer s.opsWG.Done()
		defer cancel()
		start := time.Now()
		res := controlplane.SnapshotResult{Seq: uint64(a.ID), Time: start.UTC(), Workers: len(workers), Paused: workers, Request: request, Pinned: a.Pin}
		keys, err := s.snapshotOnce(sctx, m, op, workers, require, &res)
		res.Seconds = time.Since(start).Seconds()
		if err != nil {
			res.Error = err.Error()
		}
		s.report(ctx, opDone{ev: clusterfsm.SnapshotDone{ID: a.ID, Err: err}, snap: &res, keys: keys})
	}()
}

// liveWorkers lists the live workers' ids.
func (s *Scheduler) liveWorkers() []string {
	var out []string
	for _, k := range sortedKeys(s.members) {
		if t := s.members[k]; t.member.Kind == membership.KindWorker {
			out = append(out, t.member.ID)
		}
	}
	return out
}

// startRestore has every shard of a.Shards restore a.Snapshot at a.Version,
// each reporting a RestoreDone.
func (s *Scheduler) startRestore(ctx context.Context, a clusterfsm.Restore) {
	m := s.maps[a.Version]
	s.log.Info("restoring", "snapshot", a.Snapshot.String(), "version", a.Version, "shards", a.Shards)
	s.opsWG.Add(1)
	go func() {
		defer s.opsWG.Done()
		start := time.Now()
		errs := make([]error, len(a.Shards))
		var keys []string
		if m == nil { // the core restores onto the map it just published: a bug
			for i := range errs {
				errs[i] = fmt.Errorf("scheduler: no shard map of version %d for the restore", a.Version)
			}
		} else {
			keys, errs = s.restoreAll(ctx, m, uint64(a.Snapshot))
		}
		var failed int
		var first error
		for i, id := range a.Shards {
			if errs[i] != nil {
				s.log.Warn("restore failed", "shard", id, "snapshot", a.Snapshot.String(), "err", errs[i])
				failed++
				if first == nil {
					first = errs[i]
				}
			}
			s.report(ctx, opDone{ev: clusterfsm.RestoreDone{Shard: id, Snapshot: a.Snapshot, Version: a.Version, Err: errs[i]}, keys: keys})
		}
		if failed > 0 {
			s.log.Warn("restore failed", "snapshot", a.Snapshot.String(), "version", a.Version, "failed_shards", failed,
				"shards", len(a.Shards), "seconds", time.Since(start).Seconds(), "err", first)
			return
		}
		s.log.Info("restore done", "snapshot", a.Snapshot.String(), "version", a.Version,
			"seconds", time.Since(start).Seconds())
	}()
}

// restoreAll verifies snapshot seq and has each shard of m restore it
// (seq 0: begin m's version empty), returning the state keys of the
// snapshot and one error per shard. Transient failures are retried for a
// while: a restore that fails is taken as a bad snapshot.
func (s *Scheduler) restoreAll(ctx context.Context, m *ams.ShardMap, seq uint64) (keys []string, _ []error) {
	errs := make([]error, len(m.Shards))
	fail := func(err error) ([]string, []error) {
		for i := range errs {
			errs[i] = err
		}
		return nil, errs
	}
	if seq != 0 {
		man, err := s.verifySnapshot(seq)
		if err != nil {
			return fail(err)
		}
		keys = manifestKeys(man)
	}
	cl, err := s.newClient(m)
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	var retry []bool // the shards to restore again: nil, all
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		got := cl.RestoreEach(rctx, s.opts.Config.Snapshot.Store, seq, retry)
		cancel()
		for i := range errs {
			if retry == nil || retry[i] {
				errs[i] = got[i]
			}
		}
		if errors.Join(errs...) == nil || ctx.Err() != nil || attempt == 4 || !transient(errs) {
			return keys, errs
		}
		retry = make([]bool, len(errs))
		for i, err := range errs {
			retry[i] = err != nil
			if err != nil {
				s.log.Info("restore: retrying a shard", "shard", m.Shards[i], "snapshot", seq, "attempt", attempt+2, "err", err)
			}
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
}

// verifySnapshot reads snapshot seq's manifest and checks its files.
func (s *Scheduler) verifySnapshot(seq uint64) (*snapshot.Manifest, error) {
	store, err := snapshot.OpenStore(s.opts.Config.Snapshot.Store, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	man, err := snapshot.ReadManifest(store, seq)
	if err != nil {
		return nil, err
	}
	return man, snapshot.Verify(store, man)
}

// ErrForeignSnapshots is returned (wrapped) when the snapshot store holds
// snapshots of another job than the scheduler's (config.JobConfig.ID).
var ErrForeignSnapshots = errors.New("scheduler: the snapshot store holds another job's snapshots")

// claimJob decides the id of the job the cluster runs and records it in
// etcd (s.jobID): the id etcd holds (a scheduler taking over a running
// job), else the config's job.id, else a new one; jobs are the jobs of
// the store's snapshots by seq. A store with snapshots of another job is
// refused (ErrForeignSnapshots): a new job must not resume an old one's
// model by accident, and resuming one takes its id in the config.
// Snapshots written before jobs had ids belong to any job.
func (s *Scheduler) claimJob(ctx context.Context, jobs map[uint64]string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	want := s.opts.Config.Job.ID
	rec, ok, err := s.conn.GetJob(ctx)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	if !ok {
		id := want
		if id == "" && len(foreignJobs(jobs, "")) == 0 {
			id = config.NewJobID(time.Now())
		}
		if id != "" { // else checkJob refuses the store below
			if rec, err = s.conn.ClaimJob(ctx, controlplane.JobRecord{ID: id, Created: time.Now().UTC()}); err != nil {
				return fmt.Errorf("scheduler: %w", err)
			}
		}
	}
	if rec.ID != "" && want != "" && rec.ID != want {
		return fmt.Errorf("scheduler: the cluster runs job %s, and this scheduler's config names job %s", rec.ID, want)
	}
	if err := s.checkJob(rec.ID, jobs); err != nil {
		return err
	}
	s.jobID = rec.ID
	s.log.Info("job", "id", rec.ID, "snapshot_store", s.opts.Config.Snapshot.Store)
	return nil
}

// checkJob refuses a store whose snapshots (jobs: their job by seq) are
// another job's than id ("": a job that has no id yet).
func (s *Scheduler) checkJob(id string, jobs map[uint64]string) error {
	foreign := foreignJobs(jobs, id)
	if len(foreign) == 0 {
		return nil
	}
	store := s.opts.Config.Snapshot.Store
	if id == "" {
		last := foreign[len(foreign)-1]
		return fmt.Errorf("%w: %s holds snapshots of job %s: to resume that job give its id (-set job.id=%s); "+
			"for a new job use another snapshot store", ErrForeignSnapshots, store, strings.Join(foreign, ", "), last)
	}
	return fmt.Errorf("%w: %s holds snapshots of job %s, and this is job %s: a job's snapshots need a store of their own",
		ErrForeignSnapshots, store, strings.Join(foreign, ", "), id)
}

// foreignJobs lists the jobs of jobs (snapshots' jobs by seq) other than
// id, in the order of their newest snapshot; snapshots written before jobs
// had ids belong to any job.
func foreignJobs(jobs map[uint64]string, id string) []string {
	var out []string
	for _, seq := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[seq]
		if j == "" || j == id {
			continue
		}
		out = slices.DeleteFunc(out, func(x string) bool { return x == j })
		out = append(out, j)
	}
	return out
}

// manifestKeys lists the state keys of the model man holds: its
// entries, and the job's config when it has one.
func manifestKeys(man *snapshot.Manifest) []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(man.Readers)) {
		if !strings.HasPrefix(k, ams.StateAppliedPrefix) { // each shard's own, by its index: not the model's keys
			keys = append(keys, k)
		}
	}
	if len(man.Config) > 0 {
		keys = append(keys, client.ConfigStateKey)
	}
	return keys
}

// transient reports whether every error is one a retry may cure (a shard
// that is not listening yet).
func transient(errs []error) bool {
	for _, err := range errs {
		if err != nil && !errors.Is(err, ams.ErrUnavailable) {
			return false
		}
	}
	return true
}

// waitPaused waits, at most Options.SnapshotPauseTimeout, for workers to
// acknowledge pause seq: the cut of a snapshot or an export. The workers
// registered in etcd are waited for too, though the membership watch has
// not shown them yet (a worker that registered just now may be training
// already). It returns the workers waited for.
func (s *Scheduler) waitPaused(ctx context.Context, workers []string, seq uint64) ([]string, error) {
	wctx, cancel := context.WithTimeout(ctx, s.opts.SnapshotPauseTimeout)
	defer cancel()
	resp, err := s.cli.Get(wctx, membership.MembersPrefix(s.opts.Prefix)+membership.KindWorker+"/", clientv3.WithPrefix())
	if err != nil {
		return workers, fmt.Errorf("listing the workers: %w", err)
	}
	workers = slices.Clone(workers)
	for _, kv := range resp.Kvs {
		if m, ok := s.checkMember(ctx, kv); ok && !slices.Contains(workers, m.ID) {
			workers = append(workers, m.ID)
		}
	}
	if err := s.conn.WaitPauseAcks(wctx, workers, seq, func(b controlplane.BadRecord) { s.quarantine(ctx, b) }); err != nil {
		return workers, fmt.Errorf("workers did not pause within %v: %w", s.opts.SnapshotPauseTimeout, err)
	}
	return workers, nil
}

// resumeCut resumes the workers paused by pause seq for a snapshot or an
// export once it ended, unless the cluster left SERVING meanwhile (its
// recovery resumes them) or paused them again since.
func (s *Scheduler) resumeCut(ctx context.Context, seq uint64) {
	if st := s.fsm.State(); st.Phase == clusterfsm.Serving && s.pauseSeq == seq {
		s.retry(ctx, "resume the workers", func(ctx context.Context) error {
			return s.conn.PutResume(ctx, seq, st.Version)
		})
	}
}

// report hands a background result to the run goroutine.
func (s *Scheduler) report(ctx context.Context, d opDone) {
	select {
	case s.done_ <- d:
	case <-ctx.Done():
	}
}

// finish feeds a background result to the core; after a snapshot it
// records the result and resumes the workers it paused, unless the
// cluster left SERVING meanwhile (its recovery resumes them).
func (s *Scheduler) finish(ctx context.Context, d opDone) {
	if done, ok := d.ev.(clusterfsm.SnapshotDone); ok && s.snap != nil && s.snap.id == done.ID {
		op := s.snap
		s.snap = nil
		if done.Err == nil {
			s.modelKeys = d.keys
			s.samples.snapshotTaken(d.snap.Applied)
			s.log.Info("snapshot written", "seq", d.snap.Seq, "rows", d.snap.Rows, "workers", d.snap.Workers,
				"seconds", d.snap.Seconds, "store", s.opts.Config.Snapshot.Store)
		} else {
			s.log.Warn("snapshot failed", "seq", d.snap.Seq, "err", done.Err)
		}
		s.step(ctx, d.ev)
		s.resumeCut(ctx, op.pauseSeq)
		s.putSnapshotResult(ctx, *d.snap)
		s.step(ctx, clusterfsm.CutSettled{}) // the requests queued meanwhile go
		return
	}
	if done, ok := d.ev.(clusterfsm.ExportDone); ok && s.exp != nil && s.exp.id == done.ID {
		s.exported(ctx, d)
		return
	}
	if s.step(ctx, d.ev) == nil {
		if r, ok := d.ev.(clusterfsm.RestoreDone); ok && r.Err == nil {
			s.modelKeys = d.keys // nil after a begin: an empty model
		}
	}
}

// requestSnapshot feeds an on-demand snapshot request (pinned with pin)
// to the core; a refused one is answered at once through the snapshot
// result (controlplane.RequestSnapshot), one the core queued (during a
// cut) when it runs or is refused (clusterfsm.Refused).
func (s *Scheduler) requestSnapshot(ctx context.Context, pin bool) {
	var err error
	if s.opts.Config.Snapshot.Store == "" {
		err = ErrNoSnapshotStore
	} else {
		err = s.step(ctx, clusterfsm.SnapshotRequested{Pin: pin})
	}
	if err != nil {
		s.refuseSnapshot(ctx, err)
	}
}

// refuseSnapshot answers the newest snapshot request with err.
func (s *Scheduler) refuseSnapshot(ctx context.Context, err error) {
	s.putSnapshotResult(ctx, controlplane.SnapshotResult{Time: time.Now().UTC(), Error: err.Error(), Request: s.lastRequest})
}

func (s *Scheduler) putSnapshotResult(ctx context.Context, res controlplane.SnapshotResult) {
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := s.conn.PutSnapshotResult(pctx, res); err != nil {
		s.log.Warn("recording the snapshot result failed", "err", err)
	}
}

// stopOps cancels the snapshot in progress (Close waits for the
// goroutines) and closes the sample counter's client.
func (s *Scheduler) stopOps() {
	if s.snap != nil {
		s.snap.cancel()
	}
	if s.exp != nil {
		s.exp.cancel()
	}
	s.samples.close()
}
