package job

import (
	"context"
	"fmt"
	"io"
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

// writeSaved writes where the final model is, and how to go on from it.
func (m *SavedModel) writeSaved(w io.Writer, worker string) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "%s: the model is saved: snapshot %d of job %s (%d rows) in %s; resume it with -set job.id=%s -snapshot-store %s\n",
		worker, m.Seq, m.Job, m.Rows, m.Store, m.Job, m.Store)
}
