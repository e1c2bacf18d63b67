package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/job/checkpoint"
)

// ErrLeaseLost is the cause of a job's end when its etcd lease was lost
// (the cluster declared the worker dead).
var ErrLeaseLost = errors.New("job: the worker lost its etcd lease")

// ErrRestored is returned (wrapped) when training resumes at a higher
// cluster version: the model was rolled back to a snapshot meanwhile. It
// is controlplane.ErrRestored.
var ErrRestored = controlplane.ErrRestored

// ErrTrainAgain is returned (wrapped) by a Model's Train when its attempt
// ended before the worker's share of the data did: a Kafka worker whose
// partitions were dealt anew just as it had read its old ones to their
// end. The next attempt trains on at the same cluster version, from the
// checkpoint in the model.
var ErrTrainAgain = errors.New("job: train again")

// Model is one kind of model trained by the lifecycle.
type Model interface {
	// Prepare loads the job's data, once, after the worker is registered
	// and the shard map is known (env.Client is ready).
	Prepare(ctx context.Context, env *Env) error
	// Train runs one attempt at env.Version from start, the worker's
	// checkpoint in the model (nil when the model holds none). It
	// returns nil when the job is done; an error for which Recoverable
	// holds starts another attempt once the cluster is restored.
	Train(ctx context.Context, env *Env, start *checkpoint.Checkpoint) error
	// Summary returns the model's record of the lifecycle's figures, which
	// Run fills.
	Summary() *Summary
}

// Summary is the part of a job's result that is the same for every model.
type Summary struct {
	Worker string `json:"worker"`
	Index  int    `json:"index"`
	Count  int    `json:"count"`
	Shards int    `json:"shards"`
	// Restores counts the times the job started over from a checkpoint
	// because the cluster was restored from a snapshot.
	Restores    int     `json:"restores,omitempty"`
	LoadSeconds float64 `json:"load_seconds"`
	WallSeconds float64 `json:"wall_seconds"`
	// PeakRSSBytes is the process's peak resident memory at the end of
	// the job (getrusage's maxrss; with worker -local the whole cluster's
	// process).
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
	// Snapshots and SnapshotsFailed count the snapshot attempts the
	// scheduler made while the job ran that succeeded and that failed;
	// SnapshotError is the last failure's error.
	Snapshots       int    `json:"snapshots"`
	SnapshotsFailed int    `json:"snapshots_failed,omitempty"`
	SnapshotError   string `json:"snapshot_error,omitempty"`
	// ExactlyOnce is the shards' account of this worker's pushes at the
	// end of the job (checkpoint.Verify): what the model holds, not what
	// the worker believes. Nil when the job never reached the shards.
	ExactlyOnce *checkpoint.Verified `json:"exactly_once,omitempty"`
	// Tables is what each sparse table holds at the end of the job, over
	// all the shards: rows, memory, and what admission, expiry, the
	// memory budget and the non-finite policy did (nil when the shards
	// could not be asked).
	Tables []ams.TableUsage `json:"tables,omitempty"`
	// Dense is what each dense vector's ranges refused for a NaN or Inf
	// at the end of the job, over all the shards (nil when the shards
	// could not be asked).
	Dense []ams.DenseUsage `json:"dense,omitempty"`
	// Model is where the final model was saved (nil when it was not:
	// not the first worker, or no snapshot store).
	Model *SavedModel `json:"model,omitempty"`
}

// WriteLines writes the summary's lines common to every model: the
// snapshots taken while the job ran, exactly-once by the shards' account
// of the worker's pushes, the tables, a warning for rows the shards
// refused or clipped for a NaN or Inf, and where the final model is.
func (s Summary) WriteLines(w io.Writer) {
	if s.Snapshots > 0 || s.SnapshotsFailed > 0 {
		fmt.Fprintf(w, "%s: %d snapshots taken while the job ran", s.Worker, s.Snapshots)
		if s.SnapshotsFailed > 0 {
			fmt.Fprintf(w, "; %d FAILED, the last with: %s", s.SnapshotsFailed, s.SnapshotError)
		}
		fmt.Fprintln(w)
	}
	s.writeExactlyOnce(w)
	for _, t := range s.Tables {
		fmt.Fprintf(w, "%s: table %s: %s\n", s.Worker, t.Name, UsageText(t))
	}
	s.writeNonFinite(w)
	s.Model.writeSaved(w, s.Worker)
}

// writeNonFinite writes a warning line for each table and dense vector
// whose shards refused or clipped rows holding a NaN or Inf (nothing when
// none did): training produced them, and the model did not take them as
// they were.
func (s Summary) writeNonFinite(w io.Writer) {
	for _, t := range s.Tables {
		if t.NonFiniteRefused > 0 {
			fmt.Fprintf(w, "%s: WARNING: table %s: the shards refused %s holding a NaN or Inf (not applied; the table's nonfinite: clip would clip them)\n",
				s.Worker, t.Name, nOf(t.NonFiniteRefused, "gradient row"))
		}
		if t.NonFiniteClipped > 0 {
			fmt.Fprintf(w, "%s: WARNING: table %s: the shards clipped %s holding a NaN or Inf (NaN as 0, Inf as the table's nonfinite_bound) and applied them\n",
				s.Worker, t.Name, nOf(t.NonFiniteClipped, "row"))
		}
	}
	for _, d := range s.Dense {
		if d.NonFiniteRefused > 0 {
			fmt.Fprintf(w, "%s: WARNING: dense %s: the shards refused %s holding a NaN or Inf (counted per shard's range; not applied)\n",
				s.Worker, d.Name, nOf(d.NonFiniteRefused, "gradient"))
		}
	}
}

// nOf is "1 thing" or "n things".
func nOf(n uint64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// UsageText describes a table's figures in one line: its rows and their
// memory, and the counters admission, expiry and the budget moved.
func UsageText(t ams.TableUsage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d rows (%.1f MiB of rows, %.1f MiB held", t.Rows, mib(t.RowBytes), mib(t.MemoryBytes))
	if t.FilterBytes > 0 {
		fmt.Fprintf(&b, ", admission filter %.1f MiB", mib(t.FilterBytes))
	}
	fmt.Fprintf(&b, "); %d created", t.Created)
	if t.FilteredPulls+t.FilteredPushes > 0 {
		fmt.Fprintf(&b, ", not admitted: %d pulls, %d pushes", t.FilteredPulls, t.FilteredPushes)
	}
	if t.Expired > 0 {
		fmt.Fprintf(&b, ", %d expired", t.Expired)
	}
	if t.Evicted > 0 {
		fmt.Fprintf(&b, ", %d evicted by the budget", t.Evicted)
	}
	if u := t.Tier; u != (ams.TierUsage{}) {
		fmt.Fprintf(&b, "; cold tier: %d rows (%.1f MiB encoded), DRAM hit ratio %.3f, %d read from disk in %d batches, %d promoted, %d demoted",
			u.ColdRows, mib(u.ColdBytes), u.HitRatio(), u.DiskReads, u.DiskBatches, u.Promoted, u.Demoted)
	}
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// writeExactlyOnce writes the line on exactly-once (nothing when the job
// never reached the shards or pushed nothing: a job that failed loading
// its data has nothing to account for).
func (s Summary) writeExactlyOnce(w io.Writer) {
	v := s.ExactlyOnce
	switch {
	case v == nil, v.Exact && v.Batches == 0:
	case v.Exact:
		fmt.Fprintf(w, "%s: exactly-once, by the shards' records: each of %d batches (%d samples, digest %016x) applied once on every one of %d shards\n",
			s.Worker, v.Batches, v.Samples, v.Digest, v.Shards)
	case v.NotVerified != "" && v.Problem == "":
		fmt.Fprintf(w, "%s: exactly-once not verified: %s\n", s.Worker, v.NotVerified)
	case !v.Checked && v.Problem == "":
		fmt.Fprintf(w, "%s: exactly-once not checked by batch (sync mode applies each round once by its number)\n", s.Worker)
	default:
		fmt.Fprintf(w, "%s: NOT exactly-once: %s\n", s.Worker, v.Problem)
	}
}

// ErrNotExactlyOnce is returned (wrapped) by Run when the shards' records
// show that the model does not hold exactly the batches the worker's
// checkpoint counts (pushes applied that it does not count, or counted
// ones missing), when the cluster failed, or when that could not be
// checked. The worker then leaves the cluster as a dead worker does
// (membership.Registration.Abandon), so that the scheduler rolls the
// model back to its last snapshot.
var ErrNotExactlyOnce = errors.New("job: the model does not hold exactly what this worker trained")

// ErrNotVerified is returned (wrapped) by Run when a check of the
// exactly-once verdict could not be made (the shards' records or the
// scheduler's record of restores could not be read, in time for a stopped
// job: StopBudget): the summary says "not verified" and why, never
// "exactly-once". The worker leaves as for ErrNotExactlyOnce.
var ErrNotVerified = errors.New("job: exactly-once could not be verified")

// PushTimeout bounds one push of a batch (PushContext).
const PushTimeout = time.Minute

// PushContext returns the context of one push of a batch: not cancelled
// with ctx, but ended after PushTimeout. A job that is stopped (SIGTERM)
// waits for the pushes it sent and then stores its checkpoint: a push
// cancelled halfway may be applied by some shards and not counted by the
// checkpoint, which would then be applied again on resume. The timeout
// keeps a push to a shard cut off from the network from holding the
// worker forever; a push that fails so is not counted, and the shards'
// records tell what was applied (Run's check).
func PushContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), PushTimeout)
}

// verifyTimeout bounds the end-of-job check of the shards' records.
const verifyTimeout = 30 * time.Second

// StopBudget bounds the checks a stopped job (its ctx ended: SIGTERM,
// Ctrl-C) makes after the stop, counted from it: the exactly-once check
// and the tables' figures share it, and a check it cuts short is "not
// verified", never passed. With the graceful leave from etcd (at most 5
// s) a worker told to stop is gone within 20 s whatever etcd does, inside
// Kubernetes' default grace period of 30 s (the chart gives workers 60).
// worker -local's save of its model on a stop has a bound of its own
// (StopSaveTimeout): its etcd is in its own process.
const StopBudget = 12 * time.Second

// endContext returns the context of a check Run makes once the job ended:
// ctx's values without its end, bounded by verifyTimeout and, once ctx
// ended (a stop), by StopBudget from the stop.
func (e *Env) endContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := verifyTimeout
	if ctx.Err() != nil {
		// Run's AfterFunc records the stop's time; it runs in a goroutine
		// of its own, so it may not have yet: then the stop is now.
		now := time.Now()
		e.stoppedAt.CompareAndSwap(nil, &now)
		d = min(d, time.Until(e.stoppedAt.Load().Add(StopBudget)))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), d)
}

// Env is what the lifecycle gives a model.
type Env struct {
	// Options are the job's, defaults filled and config validated.
	Options
	// Name is the worker's member name (membership.WorkerName(Index)).
	Name string
	// Conn is the worker's connection to the control plane.
	Conn *controlplane.Conn
	// Registration is the worker's membership, registered again when its
	// lease is lost (Current is the registration of now).
	Registration *membership.Kept
	// Pauser follows the scheduler's pauses: an attempt calls
	// StartTraining once it pushes, and pauses at batch boundaries while
	// Requested. A model uses Env's methods of the same names (pause.go).
	Pauser *controlplane.Pauser
	// Client reaches the shards of the current shard map, at Version.
	Client  *client.Client
	Version uint64
	// Attempt counts the attempts, from 1.
	Attempt int
	// BestRestored is the rollback that ended the job on its best model
	// (KeepBest, RollBack), when the attempt starts at the version it
	// produced: the attempt only evaluates the model (and the job exports
	// and saves it). Nil otherwise.
	BestRestored *controlplane.RollbackResult
	// reg is the registration the last attempt ran under.
	reg *membership.Registration
	// baseLog is Options.Logger as given; Logger is it with the version.
	baseLog *slog.Logger
	// summary is the model's Summary, which Run fills.
	summary *Summary
	// stopSaved is set once SaveOnStop ran (saved or failed): Run does
	// not try again.
	stopSaved bool
	// stoppedAt is when ctx ended (a stop), from which the checks after
	// it have StopBudget (endContext); nil while it runs.
	stoppedAt atomic.Pointer[time.Time]
}

// setVersion sets the version the worker trains at, and puts it on every
// line of the job's logs from now on.
func (e *Env) setVersion(v uint64) {
	e.Version = v
	e.Logger = e.baseLog.With("version", v)
}

// Say prints one progress line, prefixed with the worker's name.
func (e *Env) Say(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, e.Name+": "+format+"\n", args...)
	}
}

// Run runs the job of model m: see the package documentation.
func Run(ctx context.Context, opts Options, m Model) error {
	wall := time.Now()
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	conn, err := controlplane.New(opts.Etcd, opts.Prefix)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	s := m.Summary()
	env := &Env{Options: opts, Name: membership.WorkerName(opts.Index), Conn: conn, baseLog: opts.Logger, summary: s}
	s.Worker, s.Index, s.Count = env.Name, opts.Index, opts.Workers()
	defer func() { s.WallSeconds, s.PeakRSSBytes = time.Since(wall).Seconds(), peakRSS() }()
	defer context.AfterFunc(ctx, func() { now := time.Now(); env.stoppedAt.CompareAndSwap(nil, &now) })()
	// Kept: a lost lease is registered again. The cluster took the loss
	// for this worker's death and rolls back; the attempt that was
	// training stops and the next one resumes from the restored
	// checkpoint (attempts).
	env.Registration, err = membership.Keep(ctx, opts.Etcd, opts.Prefix, membership.Member{Kind: membership.KindWorker,
		ID: env.Name, PID: os.Getpid(), Started: time.Now()}, opts.LeaseTTL, opts.Logger)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	defer env.Registration.Close()
	// Every progress report goes to etcd too, for the status page, from a
	// goroutine of the publisher's: training never waits for it.
	pub := startPublisher(conn, env.Registration, opts.Logger)
	defer pub.close()
	env.OnProgress = pub.wrap(opts.OnProgress)
	// Pauses are acknowledged from now on (at once until training starts),
	// so that a worker loading its data holds up no snapshot.
	// A job that saves its model on a stop keeps acknowledging pauses
	// after its ctx ended: its stop's snapshot pauses it.
	if env.Pauser, err = conn.StartPauser(ctx, env.Name, opts.Logger, opts.SaveOnStop); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	defer env.Pauser.Close()
	stopWatch := env.watchSnapshots(ctx, s)
	err = env.attempts(ctx, m)
	stopWatch()
	switch {
	case !env.SavesModel() || s.Model != nil || env.stopSaved: // saved already (a model that keeps state of its own)
	case err == nil && ctx.Err() == nil:
		err = env.SaveModel(ctx, nil)
	case env.StoppedInOrder(ctx, err):
		err = errors.Join(err, env.SaveOnStop(ctx, nil))
	}
	if verr := env.verify(ctx, s, err); verr != nil {
		err = errors.Join(err, verr)
		env.Registration.Abandon() // a dead worker's leave: the model is rolled back
	} else {
		env.usage(ctx, s)
	}
	if env.Client != nil {
		env.Client.Close()
	}
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// attempts prepares the model, then trains it in attempts until one ends
// the job.
func (e *Env) attempts(ctx context.Context, m Model) error {
	s := m.Summary()
	sm, err := e.serving(ctx)
	if err != nil {
		return err
	}
	if e.Client, err = client.NewLocal(sm, e.Local, e.dialOptions()...); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	e.setVersion(sm.Version)
	s.Shards = e.Client.NumShards()
	load := time.Now()
	for {
		// The cluster may be restored while the model loads (a worker
		// restarted after its death joins while its death is rolled back):
		// a recoverable failure waits for the restore and loads again.
		err := m.Prepare(ctx, e)
		if err == nil {
			break
		}
		if ctx.Err() != nil || !Recoverable(err) {
			return err
		}
		if err := e.restored(ctx, err); err != nil {
			return err
		}
	}
	s.LoadSeconds = time.Since(load).Seconds()
	for e.Attempt = 1; ; e.Attempt++ {
		e.Pauser.SetVersion(e.Version)
		e.Logger.Info("attempt starts", "attempt", e.Attempt)
		err := e.attempt(ctx, m)
		if errors.Is(err, ErrTrainAgain) && ctx.Err() == nil {
			e.Say("%v; training on from the checkpoint in the model", err)
			continue
		}
		if errors.Is(err, ams.ErrDuplicatePush) && ctx.Err() == nil {
			// The model holds pushes of this worker that its checkpoint
			// does not count: training on would apply them twice. Leave
			// as a dead worker, so that the cluster rolls the model back
			// to its last snapshot (whose records and checkpoints agree),
			// and resume from there.
			e.Say("%v: leaving as a dead worker, so that the cluster rolls the model back to its last snapshot", err)
			if rerr := e.Registration.Renew(ctx); rerr != nil {
				return errors.Join(err, rerr)
			}
			err = fmt.Errorf("%w: %w", ErrRestored, err) // recoverable: wait for the rollback
		}
		if err == nil || ctx.Err() != nil || !Recoverable(err) {
			return err
		}
		was := e.Version
		if err := e.restored(ctx, err); err != nil {
			return err
		}
		if e.Version == was {
			e.Say("the cluster serves on at version %d; resuming from the checkpoint in the model", e.Version)
			continue
		}
		if rb, err := e.rolledBack(ctx); err == nil && rb != nil {
			e.Say("the cluster went back to the best model (snapshot %d) at version %d: evaluating it", rb.Seq, e.Version)
			continue
		}
		s.Restores++
		s.Shards = e.Client.NumShards()
		e.Say("the cluster was restored at version %d; resuming from the checkpoint in the model", e.Version)
	}
}

// attempt runs one attempt of m from the checkpoint the model holds. A
// lost lease stops it (the cluster took this worker for dead and rolls
// the model back, so nothing it trains now would count) with an error
// wrapping ErrLeaseLost, which Recoverable holds: the worker, registered
// again, resumes from the restored checkpoint.
func (e *Env) attempt(ctx context.Context, m Model) error {
	reg, err := e.Registration.Live(ctx)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	e.reg = reg
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lost := make(chan struct{})
	go func() {
		defer close(lost)
		select {
		case <-reg.Lost():
			cancel(fmt.Errorf("%w (%s)", ErrLeaseLost, e.Name))
		case <-actx.Done():
		}
	}()
	// The cluster restored at a new version, or failed: nothing of this
	// attempt counts any more. Its requests in flight are given up (one
	// to a shard cut off from the network would wait for TCP for
	// minutes), so that no worker waits on a shard the cluster has
	// replaced, or on a cluster that gave up.
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		r, err := e.Conn.WaitRestored(actx, e.Version)
		switch {
		case err == nil:
			cancel(fmt.Errorf("%w: the cluster resumed at version %d", ErrRestored, r.Version))
		case errors.Is(err, controlplane.ErrClusterFailed):
			cancel(err)
		}
	}()
	start, ok, err := checkpoint.Load(actx, e.Client, e.Name)
	if err == nil {
		err = e.checkAhead(actx, start)
	}
	if err == nil {
		e.BestRestored, err = e.rolledBack(actx)
	}
	if err == nil {
		if !ok {
			err = m.Train(actx, e, nil)
		} else {
			err = m.Train(actx, e, &start)
		}
	}
	cancel(nil)
	<-lost
	<-moved
	cause := context.Cause(actx) // the watchers' cause, if one ended the attempt (the first cancel wins)
	switch {
	case ctx.Err() != nil:
	case errors.Is(cause, ErrRestored) && err != nil && !Recoverable(err):
		err = fmt.Errorf("%w: %w", cause, err) // given up for the restore: recoverable
	case errors.Is(cause, ErrLeaseLost):
		e.Say("%v: the cluster takes this worker for dead and rolls back; registering again", cause)
		if err == nil {
			return cause
		}
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// checkAhead refuses to start an attempt from checkpoint c when a shard
// holds pushes of this worker beyond it (ams.ErrDuplicatePush: the model
// is ahead of the checkpoint, and the batches after it would be applied
// twice). Sync-mode checkpoints are not checked (their pushes name no
// batch).
func (e *Env) checkAhead(ctx context.Context, c checkpoint.Checkpoint) error {
	if c.Sync {
		return nil
	}
	recs, err := e.Client.Applied(ctx, e.Name)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	for s, a := range recs {
		if n := len(a.Ranges); n > 0 && a.Ranges[n-1].Hi > uint64(c.Batches) { // a batch at or past the checkpoint
			return fmt.Errorf("%w: shard %s holds batches %s of %s, its checkpoint counts %d", ams.ErrDuplicatePush,
				e.Client.ShardMap().Shards[s], a, e.Name, c.Batches)
		}
	}
	return nil
}

// watchSnapshots follows the scheduler's snapshot attempts while the job
// runs: each failure is said in the progress (a failed snapshot leaves the
// model unsaved: a failure now rolls back further) and counted in s. The
// returned func stops the watch and waits for it.
func (e *Env) watchSnapshots(ctx context.Context, s *Summary) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var ok, failed int
	var last string
	go func() {
		defer close(done)
		err := e.Conn.WatchSnapshotResults(ctx, func(r controlplane.SnapshotResult) {
			if r.Error == "" {
				ok++
				return
			}
			failed, last = failed+1, r.Error
			e.Say("snapshot %d FAILED: %s (the model is not saved since the last good snapshot)", r.Seq, r.Error)
		})
		if err != nil && ctx.Err() == nil { // not when stopped (Ctrl-C): that is no news
			e.Say("no longer following snapshots: %v", err)
		}
	}()
	return func() {
		cancel()
		<-done
		s.Snapshots, s.SnapshotsFailed, s.SnapshotError = ok, failed, last
	}
}

// verify checks, at the end of the job (runErr is how it ended), the
// shards' records of this worker's pushes against its checkpoint in the
// model, and records the result in s. It returns an error wrapping
// ErrNotExactlyOnce when they disagree, when the check cannot run, or
// when the cluster failed (also before the job built its client). A job
// that never built a client pushed nothing; one whose lease was lost is
// dead to the cluster already (which rolls back), and its shards may
// serve another version.
func (e *Env) verify(ctx context.Context, s *Summary, runErr error) error {
	if errors.Is(context.Cause(ctx), ErrLeaseLost) || errors.Is(runErr, ErrLeaseLost) {
		return nil
	}
	if e.Client == nil {
		// A cluster that failed before this worker could build its
		// client (its lease was lost and no snapshot was there to roll
		// back to, say) holds no model that counts: not exactly-once,
		// as for a worker that trained.
		if errors.Is(runErr, controlplane.ErrClusterFailed) {
			s.ExactlyOnce = &checkpoint.Verified{Problem: "the cluster failed before this worker trained: " + runErr.Error()}
			return fmt.Errorf("%w: %s", ErrNotExactlyOnce, s.ExactlyOnce.Problem)
		}
		return nil
	}
	vctx, cancel := e.endContext(ctx)
	defer cancel()
	v, err := checkpoint.Verify(vctx, e.Client, e.Name)
	if err != nil {
		s.ExactlyOnce = &checkpoint.Verified{NotVerified: "the shards' records could not be read: " + e.endError(vctx, err)}
		return fmt.Errorf("%w: %s", ErrNotVerified, s.ExactlyOnce.NotVerified)
	}
	// The shards' records alone do not make the verdict: a cluster that
	// failed (the scheduler's record of its last restore, in etcd) holds
	// no model that counts, whatever they say.
	switch r, ok, err := e.Conn.LastResume(vctx); {
	case err != nil:
		v.Exact, v.NotVerified = false, "the scheduler's record of the cluster's restores (in etcd) could not be read: "+e.endError(vctx, err)
	case ok && r.Failed:
		v.Exact, v.Problem = false, "the cluster failed and could not recover: "+r.Why
	}
	s.ExactlyOnce = &v
	switch {
	case !v.Exact && v.Checked || v.Problem != "":
		return fmt.Errorf("%w: %s", ErrNotExactlyOnce, v.Problem)
	case v.NotVerified != "":
		return fmt.Errorf("%w: %s", ErrNotVerified, v.NotVerified)
	}
	return nil
}

// endError says why a check of endContext failed: err, and that the
// stop's budget ran out when it did.
func (e *Env) endError(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && e.stoppedAt.Load() != nil {
		return fmt.Sprintf("%v (the job was stopped, and its checks have %v from the stop)", err, StopBudget)
	}
	return err.Error()
}

// usage records in s what the tables hold at the end of the job; a
// failure to ask is logged, not an error of the job.
func (e *Env) usage(ctx context.Context, s *Summary) {
	if e.Client == nil || errors.Is(context.Cause(ctx), ErrLeaseLost) {
		return
	}
	uctx, cancel := e.endContext(ctx)
	defer cancel()
	t, d, err := e.Client.Usage(uctx)
	if err != nil {
		e.Logger.Warn("the tables' figures", "err", e.endError(uctx, err))
		return
	}
	s.Tables, s.Dense = t, d
}

// serving waits until the cluster serves a version (a new cluster's shards
// serve none until the scheduler begins them; a failed cluster is an
// error: no worker trains on it) and returns that version's shard map.
func (e *Env) serving(ctx context.Context) (*ams.ShardMap, error) {
	e.Say("waiting for the shard map")
	var sm *ams.ShardMap
	err := e.WaitSaying(ctx, "the shard map",
		"a scheduler publishes it once its -shards AMS shards have registered (are the scheduler and the shards running, with this -etcd and -cluster?)",
		func(ctx context.Context) (err error) {
			sm, err = e.Conn.WaitServing(ctx)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("job: %w", err)
	}
	return sm, nil
}

// restored waits, after an attempt failed with cause, until the cluster is
// restored, and moves e to the shard map it resumes with.
// restoreRetry is how long a worker that left as dead for a rollback
// waits for the restore before it leaves again (waitRestored).
const restoreRetry = 30 * time.Second

// waitRestored waits until the cluster resumes at a version above this
// one. A worker that left as dead so that the cluster rolls back
// (ams.ErrDuplicatePush) leaves again every restoreRetry without a
// restore: its death may have fallen between two schedulers' leaderships
// (a long etcd outage ends both leases), where the new leader, adopting
// the cluster, sees only its new life and serves on, and the snapshots
// then fail forever on its checkpoint.
func (e *Env) waitRestored(ctx context.Context, cause error) (controlplane.Resumed, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, restoreRetry)
		r, err := e.Conn.WaitRestored(wctx, e.Version)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(cause, ams.ErrDuplicatePush) || !errors.Is(err, context.DeadlineExceeded) {
			return r, err
		}
		e.Say("no restore %v after leaving as a dead worker: leaving again", restoreRetry)
		if err := e.Registration.Renew(ctx); err != nil {
			return r, err
		}
	}
}

func (e *Env) restored(ctx context.Context, cause error) error {
	// The cluster lost state, or was rolled back: wait for the version it
	// resumes at, then start over from the restored checkpoint.
	e.Say("%v; waiting for the cluster to be restored", cause)
	var resumed controlplane.Resumed
	var err error
	if errors.Is(cause, ErrLeaseLost) {
		// The cluster may serve on at this version (this worker came back
		// in its life in time: scheduler.Options.RejoinWait) or restore:
		// whichever it serves next.
		var sm *ams.ShardMap
		if sm, err = e.Conn.WaitServing(ctx); err == nil {
			resumed.Version = sm.Version
		}
	} else {
		resumed, err = e.waitRestored(ctx, cause)
	}
	if err != nil {
		return fmt.Errorf("job: %w (after %w)", err, cause)
	}
	// The rollback may be of this worker's own death (a frozen process
	// whose lease expired): it trains on only registered again, a new
	// member of the cluster, from the restored checkpoint (its requests
	// of the old version are refused by the shards).
	for {
		reg, err := e.Registration.Live(ctx)
		if err != nil {
			return fmt.Errorf("%w (%s): %w", ErrLeaseLost, e.Name, err)
		}
		err = reg.CheckRegistered(ctx)
		if err == nil {
			if e.reg != nil && reg != e.reg {
				e.Say("this worker's lease was lost (the cluster took it for dead): registering again done")
			}
			break
		}
		if !errors.Is(err, membership.ErrNotRegistered) {
			return fmt.Errorf("%w (%s): %w", ErrLeaseLost, e.Name, err)
		}
		e.Say("this worker's lease was lost: the cluster took it for dead; registering again")
		e.reg = nil // said
		select {    // lost, and its keep-alive is about to say so: then registered again
		case <-reg.Lost():
		case <-ctx.Done():
			return fmt.Errorf("%w (%s): %w", ErrLeaseLost, e.Name, err)
		}
	}
	if resumed.Version == e.Version {
		return nil // serving on at this version: the same shards and client
	}
	next, err := e.Conn.WaitShardMapVersion(ctx, resumed.Version)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	cl, err := client.NewLocal(next, e.Local, e.dialOptions()...)
	if err != nil {
		return fmt.Errorf("job: %w", err)
	}
	e.Client.Close()
	e.Client = cl
	e.setVersion(next.Version)
	return nil
}
