package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/reader/kafkasrc"
)

// ErrLostRegistration is returned (wrapped) by Err when the scheduler's own
// lease was lost: another scheduler may take over, so this one stops.
var ErrLostRegistration = errors.New("scheduler: registration lost")

const (
	// opTimeout bounds each etcd call of the driver.
	opTimeout = 5 * time.Second
	// maxRetry caps the wait between failed resyncs.
	maxRetry = 5 * time.Second
)

// Options configures a Scheduler.
type Options struct {
	// Prefix is the cluster's etcd key prefix (see membership.Prefix). The
	// default value is membership.DefaultPrefix.
	Prefix string
	// ID is the scheduler's member id. The default value is
	// "<hostname>-<pid>".
	ID string
	// Addr is the address the scheduler advertises in its member record
	// (its status page). The default value is "" (none).
	Addr string
	// Shards is the number of AMS shards the cluster forms with. Required,
	// at least 1.
	Shards int
	// Partitions is the number of virtual partitions. The default value is
	// ams.DefaultPartitions.
	Partitions int
	// LeaseTTL is the TTL of the scheduler's own lease. The default value is
	// membership.DefaultTTL (5s).
	LeaseTTL time.Duration
	// TickInterval is how often the core gets a Tick (periodic snapshots
	// start on one) and a failed shard map publication is retried. The
	// default value is 1s, or a quarter of the snapshot interval when that
	// is shorter (at least 10ms), and at most 250ms with snapshots every N
	// samples.
	TickInterval time.Duration
	// Logger receives the scheduler's logs. The default value is
	// slog.Default().
	Logger *slog.Logger
	// Config is the job's configuration; the scheduler reads three of its
	// sections, as the workers and the embedded cluster do:
	//   - job: the training files (local, or all on one HDFS namenode as
	//     hdfs://HOST:PORT/PATH), handed out to job.workers workers: New
	//     publishes each worker's share under controlplane.AssignKey(prefix,
	//     "worker-<i>") (see reader.Assign), files larger than a share and
	//     job.split_bytes (all of them when fewer than the workers) cut into a multiple of
	//     job.workers ranges of at most job.split_bytes (never for
	//     train.format xml, whose files start with a header);
	//   - kafka: the topic whose partitions are dealt to the live workers
	//     (controlplane.DealPartitions), anew whenever a worker joins or
	//     leaves;
	//   - snapshot: where snapshots go and when they are taken; snapshots
	//     are also taken on request (controlplane.RequestSnapshot). The
	//     samples of snapshot.every_samples are counted on ticks from the
	//     workers' checkpoints in the model, as fresh as their commits.
	// Their defaults are the config's; the zero Config hands out nothing,
	// deals nothing and takes no snapshot.
	Config config.Config
	// SnapshotPauseTimeout bounds the wait for the workers to pause; a
	// snapshot whose workers do not all pause in time is abandoned. The
	// default value is 1 minute.
	SnapshotPauseTimeout time.Duration
	// RejoinWait is how long a mapped shard or a worker whose lease
	// expired is waited for to register again in the same life (the same
	// process, cut off from etcd for a while) before the cluster restores
	// (clusterfsm.Options.RejoinWait): meanwhile workers are paused, and if
	// it comes back with nothing else lost the cluster serves on at the
	// same version. A process that restarted is another life and is not
	// waited for. The default value is DefaultRejoinWait; a negative value
	// turns the wait off (every lost lease restores at once).
	RejoinWait time.Duration
	// StopSnapshotTimeout bounds the snapshot a leading scheduler takes
	// when it is stopped while the cluster serves (SaveOnStop), so that a
	// cluster stopped in order (workers, then the scheduler) keeps what
	// was trained since the last periodic snapshot. The default value is
	// DefaultStopSnapshotTimeout; a negative value takes none.
	StopSnapshotTimeout time.Duration
	// TLS, when set, is the scheduler's identity towards the AMS shards
	// (package tlsconf, the scheduler role): its clients speak mutual TLS
	// and may call the admin RPCs (snapshots, restores, exports). The
	// default value (nil) speaks plaintext.
	TLS *tlsconf.Config
}

// DefaultRejoinWait is the default of Options.RejoinWait: an etcd outage
// of 30 s, and the TTL and re-registration after it, cost a pause.
const DefaultRejoinWait = time.Minute

// DefaultStopSnapshotTimeout is the default of
// Options.StopSnapshotTimeout: within the chart's grace period for the
// scheduler (terminationGracePeriodSeconds: 120).
const DefaultStopSnapshotTimeout = 90 * time.Second

// EnsureDefaults fills zero fields with their default values.
func (o *Options) EnsureDefaults() {
	if o.Prefix == "" {
		o.Prefix = membership.DefaultPrefix
	}
	o.Config.Snapshot.EnsureDefaults()
	o.Config.Export.EnsureDefaults()
	if o.ID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "scheduler"
		}
		o.ID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Partitions == 0 {
		o.Partitions = ams.DefaultPartitions
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = membership.DefaultTTL
	}
	if o.TickInterval == 0 {
		o.TickInterval = time.Second
		if every := o.Config.Snapshot.Periodic(); every > 0 { // periodic snapshots start on a tick
			o.TickInterval = max(min(o.TickInterval, every/4), 10*time.Millisecond)
		}
		if every := o.Config.Export.Periodic(); every > 0 { // and periodic exports
			o.TickInterval = max(min(o.TickInterval, every/4), 10*time.Millisecond)
		}
		if o.Config.Snapshot.EverySamples > 0 || o.Config.Export.EverySamples > 0 { // so are those every N samples
			o.TickInterval = min(o.TickInterval, 250*time.Millisecond)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Config.Job.Workers == 0 {
		o.Config.Job.Workers = 1
	}
	if o.Config.Job.SplitBytes == 0 {
		o.Config.Job.SplitBytes = 64 << 20
	}
	if o.SnapshotPauseTimeout == 0 {
		o.SnapshotPauseTimeout = time.Minute
	}
	if o.RejoinWait == 0 {
		o.RejoinWait = DefaultRejoinWait
	}
	if o.StopSnapshotTimeout == 0 {
		o.StopSnapshotTimeout = DefaultStopSnapshotTimeout
	}
}

// Validate reports every problem with the options. Call EnsureDefaults
// first: New does.
func (o *Options) Validate() error {
	var errs []error
	if err := membership.ValidatePrefix(o.Prefix); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
	}
	if err := (membership.Member{Kind: membership.KindScheduler, ID: o.ID}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
	}
	if o.LeaseTTL < 0 {
		errs = append(errs, fmt.Errorf("%w: LeaseTTL %v is negative", ErrBadConfig, o.LeaseTTL))
	}
	if o.Config.Job.Workers < 0 {
		errs = append(errs, fmt.Errorf("%w: job.workers %d is negative", ErrBadConfig, o.Config.Job.Workers))
	}
	if err := o.Config.Snapshot.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadConfig, err))
	}
	if o.SnapshotPauseTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: SnapshotPauseTimeout %v is negative", ErrBadConfig, o.SnapshotPauseTimeout))
	}
	if o.TickInterval < 0 {
		errs = append(errs, fmt.Errorf("%w: TickInterval %v is negative", ErrBadConfig, o.TickInterval))
	}
	if o.Shards < 1 || o.Shards > 1<<16-1 {
		errs = append(errs, fmt.Errorf("%w: Shards %d is not in [1, 65535]", ErrBadConfig, o.Shards))
	}
	if o.Partitions < 1 || o.Partitions < o.Shards || o.Partitions > ams.MaxPartitions {
		errs = append(errs, fmt.Errorf("%w: Partitions %d is not in [Shards %d, %d]", ErrBadConfig, o.Partitions, o.Shards, ams.MaxPartitions))
	}
	return errors.Join(errs...)
}

// ErrBadConfig is returned (wrapped) for invalid Options.
var ErrBadConfig = errors.New("scheduler: bad config")

// tracked is a member key the driver has seen, with the revision that
// created it (one per incarnation).
type tracked struct {
	member    membership.Member
	createRev int64
}

// Scheduler is the driver around the cluster state machine
// (clusterfsm.Core): it registers itself as a member, campaigns to lead,
// and once leader watches <prefix>/members/ and <prefix>/left/, feeds the
// Core and carries out its actions (shard maps, pauses, snapshots,
// restores, resumes; events in etcd, logs). One goroutine, started by New
// and stopped by Close, owns the Core; snapshots and restores run in
// goroutines of their own that report back to it as events.
type Scheduler struct {
	cli    *clientv3.Client
	conn   *controlplane.Conn
	opts   Options
	log    *slog.Logger
	reg    *membership.Kept         // registered again when its lease is lost
	term   *membership.Registration // the registration this leadership term runs under
	cancel context.CancelCauseFunc
	done   chan struct{}
	err    error // why run stopped; written before done is closed

	mu struct {
		sync.Mutex
		state  clusterfsm.State
		since  time.Time // when state was entered (the status page)
		leader bool
		// seq is the last event sequence number (putEvent runs on the
		// run goroutine and, for a quarantined record, on a snapshot's).
		seq uint64
		// quarantined counts the records reported by quarantine;
		// reported holds each one's key and revision, to report it once.
		quarantined int
		reported    map[string]int64
	}

	// Owned by the run goroutine.
	fsm     *clusterfsm.Core
	members map[string]tracked // by "kind/id"
	left    map[string]bool    // left markers present, by "kind/id"
	pending *ams.ShardMap      // shard map not yet published
	maps    map[uint64]*ams.ShardMap
	// lastRequest is the etcd revision of the newest snapshot request
	// seen (SnapshotResult.Request).
	lastRequest int64
	// modelKeys are the state keys of the model the cluster restored or
	// last saved: state entries are never deleted, so every later snapshot
	// must hold them all (a shard that lost its state fails it). Nil when
	// unknown (a cluster begun empty or adopted).
	modelKeys []string
	// jobID is the id of the job the cluster runs (claimJob), recorded in
	// every snapshot.
	jobID    string
	deal     partitionDeal // Kafka partitions dealt to workers
	pauseSeq uint64        // last pause request
	snap     *snapOp       // the snapshot in progress
	// rb is the rollback in progress, lastRollbackRequest the etcd
	// revision of the newest rollback request seen, restoring the
	// snapshot of the restore in progress. (Requests that come during
	// a cut are queued by the core: clusterfsm.Queued.)
	rb                  *rollbackOp
	lastRollbackRequest int64
	restoring           clusterfsm.SnapshotID
	// exp is the model export in progress, chain the export store's
	// chain as this leader knows it; lastExportRequest is the etcd
	// revision of the newest export request seen.
	exp               *expOp
	chain             exportChain
	lastExportRequest int64
	samples           sampleCount // snapshots every Snapshot.EverySamples
	done_             chan opDone // background operations report here

	opsWG sync.WaitGroup // snapshot and restore goroutines

	// board is the status page's memory, fed by the followStatus
	// goroutine (on every scheduler, a standby too) until statusDone.
	board      *statusBoard
	statusDone chan struct{}
}

// partitionDeal is the scheduler's view of the partition assignment.
type partitionDeal struct {
	partitions int      // of the topic; 0: no Kafka job
	gen        int64    // generation last published
	workers    []string // the live workers of that generation
	dirty      bool     // the live workers changed and the deal is not yet published
}

// New validates opts, registers the scheduler as a member of kind
// "scheduler" and starts the goroutine that drives the cluster. The caller
// keeps ownership of cli and must call Close.
func New(cli *clientv3.Client, opts Options) (*Scheduler, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	conn, err := controlplane.New(cli, opts.Prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	reg, err := membership.Keep(ctx, cli, opts.Prefix,
		membership.Member{Kind: membership.KindScheduler, ID: opts.ID, Addr: opts.Addr}, opts.LeaseTTL, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	if len(opts.Config.Job.Train) > 0 {
		if err := assign(ctx, conn, opts); err != nil {
			reg.Close()
			return nil, err
		}
	}
	var deal partitionDeal
	if opts.Config.Kafka.Topic != "" {
		if deal, err = startDeal(ctx, conn, opts); err != nil {
			reg.Close()
			return nil, err
		}
	}
	// The run context ends on Close, or when cli is closed under us (then
	// no etcd call can succeed and the lease is as good as lost).
	runCtx, stop := context.WithCancelCause(context.Background())
	s := &Scheduler{
		cli: cli, conn: conn, opts: opts, reg: reg, cancel: stop, done: make(chan struct{}),
		log:     opts.Logger.With("component", "scheduler", "prefix", opts.Prefix),
		members: make(map[string]tracked), left: make(map[string]bool), deal: deal,
		maps: make(map[uint64]*ams.ShardMap), done_: make(chan opDone, 16),
		board: &statusBoard{b: newBoard(historyLen, resultsLen, maxWorkers)}, statusDone: make(chan struct{}),
	}
	s.mu.state = clusterfsm.State{Phase: clusterfsm.Forming}
	stopAfter := context.AfterFunc(cli.Ctx(), func() {
		stop(fmt.Errorf("%w: etcd client closed", ErrLostRegistration))
	})
	go func() {
		defer stopAfter()
		s.run(runCtx)
	}()
	go func() {
		defer close(s.statusDone)
		s.followStatus(runCtx)
	}()
	return s, nil
}

// Status returns the cluster state as this scheduler sees it (FORMING
// while it does not lead).
func (s *Scheduler) Status() clusterfsm.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.state
}

// Done is closed when the scheduler stops: after Close, or on its own when
// its registration is lost (see Err).
func (s *Scheduler) Done() <-chan struct{} { return s.done }

// Err returns why the scheduler stopped on its own (wrapping
// ErrLostRegistration), or nil. It is meaningful once Done is closed.
func (s *Scheduler) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close stops the goroutine, waits for it, and leaves the cluster
// gracefully. It returns the error that stopped the scheduler, if any, and
// the error of leaving.
func (s *Scheduler) Close() error {
	s.cancel(nil)
	<-s.done
	<-s.statusDone
	s.opsWG.Wait() // started by the run goroutine, which has returned
	return errors.Join(s.err, s.reg.Close())
}

func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	for {
		tctx, cancel := context.WithCancel(ctx)
		s.err = s.lead(tctx)
		cancel()
		if !errors.Is(s.err, ErrLostRegistration) || ctx.Err() != nil {
			break
		}
		// The lease was lost (etcd unreachable for longer than the TTL):
		// leadership went with it. Registered again, campaign again; the
		// next term takes the cluster over as a new leader does
		// (adoption), from what etcd holds.
		s.log.Warn("lost the lease and the leadership: campaigning again", "err", s.err)
		s.endTerm()
	}
	if cause := context.Cause(ctx); s.err == nil && !errors.Is(cause, context.Canceled) {
		s.err = cause
	}
	if s.err != nil {
		s.log.Error("scheduler stopped", "err", s.err)
	}
}

// lead waits to be elected leader of the cluster's schedulers (an etcd
// election on the registration's lease, so leadership ends with the
// lease), then drives the cluster until ctx ends. A standby scheduler
// waits here and takes over, resuming from etcd, when the leader leaves or
// dies.
func (s *Scheduler) lead(ctx context.Context) error {
	reg, err := s.reg.Live(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("scheduler: %w", err)
	}
	s.term = reg
	s.log.Info("campaigning to lead the cluster", "id", s.opts.ID)
	l, err := s.conn.Elect(ctx, reg, s.opts.ID)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("scheduler: %w", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
		defer cancel()
		l.Resign(rctx)
	}()
	s.mu.Lock()
	s.mu.leader = true
	s.mu.Unlock()
	s.log.Info("leading the cluster", "id", s.opts.ID)
	if s.opts.Config.Kafka.Topic != "" { // the last leader may have dealt since New looked
		d, err := startDeal(ctx, s.conn, s.opts)
		if err != nil {
			return err
		}
		s.deal = d
	}
	defer s.stopOps()
	if err := s.newCore(ctx); err != nil {
		return err
	}
	return s.loop(ctx)
}

// endTerm forgets what a leadership term knew, once its operations are
// done (their context ended with the term), so that the next term starts
// as a new leader: from etcd and the snapshot store.
func (s *Scheduler) endTerm() {
	s.opsWG.Wait()
	for {
		select {
		case <-s.done_: // reports of the term's operations: stale now
			continue
		default:
		}
		break
	}
	s.fsm, s.pending, s.snap = nil, nil, nil // the requests the core queued go with it
	s.rb = nil
	s.exp, s.chain = nil, exportChain{}
	s.members, s.left, s.maps = make(map[string]tracked), make(map[string]bool), make(map[uint64]*ams.ShardMap)
	s.modelKeys, s.jobID, s.samples = nil, "", sampleCount{}
	s.mu.Lock()
	s.mu.leader, s.mu.state = false, clusterfsm.State{Phase: clusterfsm.Forming}
	s.mu.Unlock()
}

// Leader reports whether this scheduler leads the cluster (a standby does
// not, until the leader goes away).
func (s *Scheduler) Leader() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.leader
}

// loop syncs with etcd, then watches from the synced revision; a broken
// watch starts it over. It returns nil when ctx ends.
func (s *Scheduler) loop(ctx context.Context) error {
	ticker := time.NewTicker(s.opts.TickInterval)
	defer ticker.Stop()
	retry := 100 * time.Millisecond
	for {
		rev, err := s.sync(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("sync with etcd failed, retrying", "err", err, "in", retry)
			select {
			case <-ctx.Done():
				return nil
			case <-s.term.Lost():
				return fmt.Errorf("%w: %s", ErrLostRegistration, s.reg.Member())
			case <-time.After(retry):
			}
			retry = min(2*retry, maxRetry)
			continue
		}
		retry = 100 * time.Millisecond
		s.step(ctx, clusterfsm.Tick{Now: time.Now()}) // the initial sync is over (adoption decides here)
		err = s.watch(ctx, rev+1, ticker.C)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrLostRegistration) {
			return err
		}
		s.log.Warn("membership watch broke, resyncing", "err", err)
	}
}

// sync reads members and left markers, reconciles the tracked members with
// them (feeding the Core joins and leaves), and returns the revision read.
func (s *Scheduler) sync(ctx context.Context) (int64, error) {
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	resp, err := s.cli.Get(gctx, membership.LeftPrefix(s.opts.Prefix), s.watchRange())
	cancel()
	if err != nil {
		return 0, fmt.Errorf("scheduler: sync: %w", err)
	}
	left := make(map[string]bool)
	live := make(map[string]tracked)
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		if kind, id, ok := membership.ParseLeftKey(s.opts.Prefix, key); ok {
			left[kind+"/"+id] = true
			continue
		}
		if m, ok := s.checkMember(ctx, kv); ok {
			live[m.String()] = tracked{member: m, createRev: kv.CreateRevision}
		}
	}
	s.left = left
	for _, k := range sortedKeys(s.members) {
		old := s.members[k]
		if cur, ok := live[k]; ok && cur.createRev == old.createRev {
			continue
		}
		delete(s.members, k)
		_, stillThere := live[k]
		s.memberLeft(ctx, old, !stillThere && left[k])
	}
	for _, k := range sortedKeys(live) {
		if _, ok := s.members[k]; ok {
			continue
		}
		s.members[k] = live[k]
		s.memberJoined(ctx, live[k])
	}
	s.dealPartitions(ctx)
	return resp.Header.Revision, nil
}

// watchRange makes a Get or Watch from <prefix>/left/ cover <prefix>/members/
// too ("left/" sorts before "members/"; nothing else of the layout sorts
// between them).
func (s *Scheduler) watchRange() clientv3.OpOption {
	return clientv3.WithRange(clientv3.GetPrefixRangeEnd(membership.MembersPrefix(s.opts.Prefix)))
}

// watch applies membership changes from rev on, and ticks, until the watch
// breaks (returns why), ctx ends, or the registration is lost.
func (s *Scheduler) watch(ctx context.Context, rev int64, tick <-chan time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := s.cli.Watch(wctx, membership.LeftPrefix(s.opts.Prefix), s.watchRange(),
		clientv3.WithRev(rev), clientv3.WithPrevKV())
	requests := s.cli.Watch(wctx, controlplane.SnapshotRequestKey(s.opts.Prefix), clientv3.WithRev(rev))
	exportRequests := s.cli.Watch(wctx, controlplane.ExportRequestKey(s.opts.Prefix), clientv3.WithRev(rev))
	rollbacks := s.cli.Watch(wctx, controlplane.RollbackRequestKey(s.opts.Prefix), clientv3.WithRev(rev))
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.term.Lost():
			return fmt.Errorf("%w: %s", ErrLostRegistration, s.reg.Member())
		case now := <-tick:
			s.step(ctx, clusterfsm.Tick{Now: now})
			s.checkSamples(ctx)
			s.publishPending(ctx)
			s.dealPartitions(ctx)
		case d := <-s.done_:
			s.finish(ctx, d)
		case resp, ok := <-requests:
			if !ok || resp.Err() != nil {
				return fmt.Errorf("scheduler: snapshot request watch broke: %v", resp.Err())
			}
			for _, ev := range resp.Events {
				s.lastRequest = ev.Kv.ModRevision
				s.requestSnapshot(ctx, controlplane.IsPinRequest(ev.Kv.Value))
			}
		case resp, ok := <-rollbacks:
			if !ok || resp.Err() != nil {
				return fmt.Errorf("scheduler: rollback request watch broke: %v", resp.Err())
			}
			for _, ev := range resp.Events {
				s.lastRollbackRequest = ev.Kv.ModRevision
				s.requestRollback(ctx)
			}
		case resp, ok := <-exportRequests:
			if !ok || resp.Err() != nil {
				return fmt.Errorf("scheduler: export request watch broke: %v", resp.Err())
			}
			for _, ev := range resp.Events {
				s.lastExportRequest = ev.Kv.ModRevision
				s.requestExport(ctx)
			}
		case resp, ok := <-wch:
			if !ok {
				return errors.New("scheduler: watch channel closed")
			}
			if err := resp.Err(); err != nil {
				return fmt.Errorf("scheduler: watch: %w", err)
			}
			for _, ev := range resp.Events {
				s.apply(ctx, ev)
			}
			s.dealPartitions(ctx)
		}
	}
}

// apply turns one etcd event into Core events.
func (s *Scheduler) apply(ctx context.Context, ev *clientv3.Event) {
	key := string(ev.Kv.Key)
	if kind, id, ok := membership.ParseLeftKey(s.opts.Prefix, key); ok {
		if ev.Type == clientv3.EventTypePut {
			s.left[kind+"/"+id] = true
		} else {
			delete(s.left, kind+"/"+id)
		}
		return
	}
	kind, id, ok := membership.ParseMemberKey(s.opts.Prefix, key)
	if !ok {
		return
	}
	k := kind + "/" + id
	if ev.Type == clientv3.EventTypeDelete {
		old, ok := s.members[k]
		if !ok {
			return
		}
		delete(s.members, k)
		s.memberLeft(ctx, old, s.left[k])
		return
	}
	m, ok := s.checkMember(ctx, ev.Kv)
	if !ok {
		return
	}
	if old, ok := s.members[k]; ok && old.createRev != ev.Kv.CreateRevision { // a new life
		s.memberLeft(ctx, old, false)
	} else if ok {
		s.members[k] = tracked{member: m, createRev: ev.Kv.CreateRevision} // an update of its record
		return
	}
	s.members[k] = tracked{member: m, createRev: ev.Kv.CreateRevision}
	s.memberJoined(ctx, s.members[k])
}

// checkMember decodes a member record and checks that a member of this
// job could have written it (membership.CheckRecord: under a lease). In a
// job over files, whose shares the scheduler assigns to worker-0 up to
// job.workers (assign), a worker of any other name gets no data: its
// record is no worker's either. (A Kafka job's partitions are dealt to
// the workers alive, whatever their count.) A record that fails is
// quarantined: reported, and no member.
func (s *Scheduler) checkMember(ctx context.Context, kv *mvccpb.KeyValue) (membership.Member, bool) {
	key := string(kv.Key)
	m, err := membership.CheckRecord(s.opts.Prefix, key, kv.Value, kv.Lease)
	if err == nil && m.Kind == membership.KindWorker && len(s.opts.Config.Job.Train) > 0 && !s.opts.Config.Kafka.Enabled() {
		if i, ok := membership.WorkerIndex(m.ID); !ok || i >= s.opts.Config.Job.Workers {
			err = fmt.Errorf("%s is not one of the job's %d workers (worker-0 to worker-%d; the scheduler's -workers must be the workers' own)",
				m.ID, s.opts.Config.Job.Workers, s.opts.Config.Job.Workers-1)
		}
	}
	if err != nil {
		s.quarantine(ctx, controlplane.BadRecord{Key: key, Value: kv.Value, Revision: kv.ModRevision, Why: err.Error()})
		return membership.Member{}, false
	}
	return m, true
}

// quarantine reports a record that no process of the job could have
// written, once per key and revision: a warning, an event and the
// quarantined_records metric. The record stays in etcd and is otherwise
// ignored, so it can neither block nor fool the protocol that reads it.
// Safe to call from any goroutine.
func (s *Scheduler) quarantine(ctx context.Context, b controlplane.BadRecord) {
	s.mu.Lock()
	if s.mu.reported == nil {
		s.mu.reported = map[string]int64{}
	}
	if rev, ok := s.mu.reported[b.Key]; ok && rev == b.Revision {
		s.mu.Unlock()
		return
	}
	s.mu.reported[b.Key] = b.Revision
	s.mu.quarantined++
	s.mu.Unlock()
	s.log.Warn("quarantined a record no process of this job wrote: ignored", "key", b.Key, "value", clip(b.Value), "why", b.Why)
	s.putEvent(ctx, controlplane.Event{Type: controlplane.EventQuarantined, Detail: b.Key + ": " + b.Why})
}

// Quarantined returns how many records the scheduler quarantined.
func (s *Scheduler) Quarantined() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.quarantined
}

// clip quotes a record's value for a log line, at most 64 bytes of it.
func clip(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// publishPending publishes the pending shard map; on failure it stays
// pending and the next tick retries.
func (s *Scheduler) publishPending(ctx context.Context) {
	m := s.pending
	if m == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	err := s.conn.PublishShardMap(pctx, m)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("publishing shard map failed, will retry", "version", m.Version, "err", err)
		}
		return
	}
	s.pending = nil
	s.log.Info("shard map published", "version", m.Version, "partitions", m.Partitions, "shards", m.Shards)
	s.putEvent(ctx, controlplane.Event{Type: controlplane.EventShardMap, Version: m.Version,
		Detail: fmt.Sprintf("%d partitions over %v", m.Partitions, m.Shards)})
}

// putEvent records e (best effort: a failure is logged).
func (s *Scheduler) putEvent(ctx context.Context, e controlplane.Event) {
	now := time.Now()
	e.Time = now
	s.mu.Lock()
	s.mu.seq = max(s.mu.seq+1, uint64(now.UnixNano()))
	seq := s.mu.seq
	s.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := s.conn.PutEvent(pctx, seq, e); err != nil && ctx.Err() == nil {
		s.log.Warn("recording event failed", "type", e.Type, "err", err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// assign divides the job's training files among its workers and publishes each
// worker's share.
func assign(ctx context.Context, conn *controlplane.Conn, opts Options) error {
	fsys, closer, err := hdfssrc.ForPaths(opts.Config.Job.Train, "")
	if err != nil {
		return fmt.Errorf("scheduler: training data: %w", err)
	}
	defer closer.Close()
	paths, err := reader.ExpandPathsFS(fsys, opts.Config.Job.Train)
	if err != nil {
		return fmt.Errorf("scheduler: training data: %w", err)
	}
	files, err := reader.StatFilesFS(fsys, paths)
	if err != nil {
		return fmt.Errorf("scheduler: training data: %w", err)
	}
	shares, err := reader.Assign(files, opts.Config.Job.Workers, opts.Config.Job.SplitBytes, opts.Config.Train.Format != "xml")
	if err != nil {
		return fmt.Errorf("scheduler: assign training data: %w", err)
	}
	for i, splits := range shares {
		worker := membership.WorkerName(i)
		if err := conn.PutAssignment(ctx, worker, splits); err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		if len(splits) == 0 {
			opts.Logger.Warn("a worker gets no training data: the data cuts into fewer pieces than there are workers (fewer bytes, or fewer xml files, which are never cut)",
				"worker", worker, "files", len(files), "workers", len(shares))
			continue
		}
		opts.Logger.Info("assigned training data", "worker", worker, "splits", len(splits))
	}
	return nil
}

// startDeal looks up the topic's partitions and the last published
// generation, so that a restarted scheduler continues the numbering.
func startDeal(ctx context.Context, conn *controlplane.Conn, opts Options) (partitionDeal, error) {
	offs, err := kafkasrc.PartitionOffsets(ctx, opts.Config.Kafka.Brokers, opts.Config.Kafka.Topic)
	if err != nil {
		return partitionDeal{}, fmt.Errorf("scheduler: %w", err)
	}
	d := partitionDeal{partitions: len(offs), dirty: true}
	cur, ok, err := conn.GetPartitionAssignment(ctx)
	if err != nil {
		return d, fmt.Errorf("scheduler: %w", err)
	}
	if ok {
		d.gen = cur.Generation
	}
	return d, nil
}

// dealPartitions publishes a new deal of the topic's partitions when the
// live workers changed (or the last publication failed). A worker that
// has read its partitions to their end (controlplane.MarkPartitionsDone)
// is dealt none: it reads no more, so the rest of a partition dealt to it
// would never be read. The deal is published only if no worker marked its
// partitions done since they were read (else it is made again).
func (s *Scheduler) dealPartitions(ctx context.Context) {
	d := &s.deal
	if d.partitions == 0 {
		return
	}
	var live []string
	for _, t := range s.members {
		if t.member.Kind == membership.KindWorker {
			live = append(live, t.member.ID)
		}
	}
	slices.Sort(live)
	if !d.dirty && slices.Equal(live, d.workers) {
		return
	}
	d.dirty = true
	if len(live) == 0 {
		d.workers, d.dirty = live, false // nothing to deal: keep the last deal
		return
	}
	for range 3 { // a worker marked done between the read and the put: again
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		ok, readers, a, err := s.publishDeal(pctx, live)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("publishing partition assignment failed, will retry", "err", err)
			}
			return
		}
		if !ok {
			continue
		}
		if len(readers) == 0 {
			d.workers, d.dirty = live, false // every live worker has read to the end: keep the last deal
			return
		}
		d.gen, d.workers, d.dirty = a.Generation, live, false
		s.log.Info("partitions dealt", "topic", a.Topic, "generation", a.Generation, "workers", readers)
		s.putEvent(ctx, controlplane.Event{Type: "partitions", Version: uint64(a.Generation),
			Detail: fmt.Sprintf("%d partitions of %s over %v", a.Partitions, a.Topic, readers)})
		return
	}
}

// publishDeal deals the partitions to the live workers that still read
// (readers) and publishes the deal unless a worker marked its partitions
// done meanwhile (ok false). With no reader it publishes nothing.
func (s *Scheduler) publishDeal(ctx context.Context, live []string) (ok bool, readers []string, a controlplane.PartitionAssignment, err error) {
	done, rev, err := s.conn.PartitionsDone(ctx, s.fsm.State().Version)
	if err != nil {
		return false, nil, a, err
	}
	readers = slices.DeleteFunc(slices.Clone(live), func(w string) bool { return done[w] })
	if len(readers) == 0 {
		return true, nil, a, nil
	}
	a = controlplane.DealPartitions(s.deal.gen+1, s.opts.Config.Kafka.Topic, s.deal.partitions, readers)
	ok, err = s.conn.PutPartitionAssignmentIf(ctx, a, rev)
	return ok, readers, a, err
}
