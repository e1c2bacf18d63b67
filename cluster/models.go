package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
)

// KeptModels is how many jobs' trained models Options.ModelRoot keeps.
const KeptModels = 5

// modelRoot is the retention of the models under Options.ModelRoot: dir
// is the directory of this process's job there, progress (nil: nowhere)
// hears what is removed.
type modelRoot struct {
	root, dir string
	progress  io.Writer
}

// keep applies the retention once the job has run (Close calls it): a
// run that trained nothing (dir holds no snapshot whose checkpoints count
// a sample applied: it failed or was stopped before training) neither
// counts against the kept jobs nor removes one, and its own directory
// goes; a run that trained keeps the newest KeptModels trained jobs' models,
// its own counted, and removes the older ones. Directories it did not name
// (config.NewJobID) and untrained ones of other runs (one may be starting
// beside this one) are left alone. It says what it removed.
func (r *modelRoot) keep() error {
	if !trained(r.dir) {
		if err := os.RemoveAll(r.dir); err != nil {
			return fmt.Errorf("cluster: removing the model directory of a run that trained nothing: %w", err)
		}
		r.say("removed %s: it holds no trained model (the run failed or stopped before a snapshot of what it trained), so it does not count (%s keeps the last %d trained jobs')", r.dir, r.root, KeptModels)
		return nil
	}
	removed, err := pruneModels(r.dir)
	if len(removed) > 0 {
		r.say("removed the %d oldest trained models from %s (it keeps the last %d trained jobs'): %v", len(removed), r.root, KeptModels, removed)
	}
	return err
}

func (r *modelRoot) say(format string, args ...any) {
	if r.progress != nil {
		fmt.Fprintf(r.progress, format+"\n", args...)
	}
}

// pruneModels removes from the directory above dir (a job's model under
// Options.ModelRoot) the trained models of all but the newest KeptModels
// trained jobs, dir counted, so that runs repeated for days do not fill
// the disk. It removes only directories named as config.NewJobID names
// jobs, and returns their paths.
func pruneModels(dir string) (removed []string, err error) {
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "job-????????-??????-*"))
	old = slices.DeleteFunc(old, func(p string) bool { return p == dir || !trained(p) })
	slices.Sort(old) // by time: the ids start with it
	for _, p := range old[:max(0, len(old)-(KeptModels-1))] {
		if err := os.RemoveAll(p); err != nil {
			return removed, fmt.Errorf("cluster: removing an old model: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// trained reports whether the snapshot store in dir holds a trained
// model: a snapshot whose workers' checkpoints count a sample applied
// (its manifest read, its files not verified). What cannot be read counts
// as trained: a damaged model is kept as a model, never removed as a run
// that trained nothing.
func trained(dir string) bool {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false
	}
	s, err := snapshot.OpenDir(dir)
	if err != nil {
		return true
	}
	defer s.Close()
	seqs, err := snapshot.Snapshots(s)
	if err != nil {
		return true
	}
	for _, seq := range seqs {
		m, err := snapshot.ReadManifest(s, seq)
		if err != nil || checkpoint.AppliedIn(m.Readers) > 0 {
			return true
		}
	}
	return false
}
