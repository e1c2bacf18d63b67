package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// SavedModel is where a job's final model was saved: the snapshot the
// first worker had the scheduler take once the job was done.
type SavedModel struct {
	// Job is the job's id, which a job resuming the snapshot names
	// (config.JobConfig.ID).
	Job string `json:"job"`
	// Store is the snapshot store (config.Config.Snapshot.Store).
	Store string `json:"store"`
	Seq   uint64 `json:"seq"`
	Rows  int64  `json:"rows"`
}

// SavesModel reports whether this worker saves the final model once its
// job is done (SaveModel): the first worker of a job with a snapshot store
// (a job run by `worker -local` has one by default), so that the model
// outlives the job.
func (e *Env) SavesModel() bool {
	return e.Index == 0 && e.Config.Snapshot.Store != "" && e.Client != nil
}

// SaveModel has the scheduler take a snapshot of the final model and
// records where it went in the summary. Run calls it once the job is
// done: after the final evaluation (every worker has passed its barrier,
// no one trains any more) and the final export. A model that keeps state
// of its own in the worker calls it at the end of its last attempt
// instead, with hold: hold runs while the request waits for the snapshot
// and serves its pause (writes that state into the snapshot); it returns
// once its context is done.
func (e *Env) SaveModel(ctx context.Context, hold func(context.Context) error) error {
	r, err := e.requestSnapshot(ctx, false, hold)
	if err != nil {
		return fmt.Errorf("job: the final snapshot: %w", err)
	}
	id := e.Config.Job.ID
	if rec, ok, err := e.Conn.GetJob(ctx); err == nil && ok {
		id = rec.ID // the scheduler's pick, when the config had none
	}
	e.summary.Model = &SavedModel{Job: id, Store: e.Config.Snapshot.Store, Seq: r.Seq, Rows: r.Rows}
	e.Say("saved the final model: snapshot %d (%d rows) in %s", r.Seq, r.Rows, e.Config.Snapshot.Store)
	return nil
}

// writeSaved writes where the final model is, and how to go on from it:
// the two config keys, which every program on package job has, and the
// worker's flags that set them.
func (m *SavedModel) writeSaved(w io.Writer, worker string) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "%s: the model is saved: snapshot %d of job %s (%d rows) in %s; resume it with job.id %s and snapshot.store %s (the worker's flags: -set job.id=%s -snapshot-store %s)\n",
		worker, m.Seq, m.Job, m.Rows, m.Store, m.Job, m.Store, m.Job, m.Store)
}

// StopSaveTimeout bounds the save of an orderly stop (Options.SaveOnStop):
// a snapshot not written by then is given up, and the stop fails.
const StopSaveTimeout = 2 * time.Minute

// StoppedInOrder reports whether an attempt that ended with err was
// stopped in order, so that the model saves on stop (SaveOnStop): the job
// is to (Options.SaveOnStop), its ctx was cancelled (a signal), not for a
// lost lease (the cluster took the worker for dead and rolls back), and
// the attempt ended with nothing but the stop.
func (e *Env) StoppedInOrder(ctx context.Context, err error) bool {
	if !e.Options.SaveOnStop || ctx.Err() == nil || errors.Is(context.Cause(ctx), ErrLeaseLost) || errors.Is(err, ErrLeaseLost) {
		return false
	}
	return err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(ctx))
}

// SaveOnStop saves the model of a job stopped in order (StoppedInOrder):
// a snapshot of what the shards applied up to the stop, with the
// checkpoint the stopped attempt stored, taken with time of its own
// (StopSaveTimeout, as ctx has ended). hold is as for SaveModel. A second
// Ctrl-C ends the process at once, unsaved (the signal's default action
// is back after the first one). It says where the model went and how to
// go on from it; a failure says that the model is not saved.
func (e *Env) SaveOnStop(ctx context.Context, hold func(context.Context) error) error {
	e.stopSaved = true
	e.Say("stopped: saving the model to %s (at most %v; Ctrl-C again exits at once without it)", e.Config.Snapshot.Store, StopSaveTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopSaveTimeout)
	defer cancel()
	if err := e.SaveModel(sctx, hold); err != nil {
		e.Say("the model is NOT saved: %v", err)
		return err
	}
	m := e.summary.Model
	more := ""
	if e.Config.Kafka.Streaming {
		more = " (the stream reads only what is new)"
	}
	e.Say("run it again with -set job.id=%s -snapshot-store %s to go on from it%s", m.Job, m.Store, more)
	return nil
}
