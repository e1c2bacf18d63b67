package ctrtrain

import (
	"context"
	"fmt"

	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/snapshot"
)

// warmBatch is how many rows one load request carries.
const warmBatch = 32 << 10

// warmStart loads the newest model of the export store at loc into the
// shards through cl: each export of the chain in order (a delta's rows
// overwrite, its deletions delete), then the last one's dense vector. It
// returns the export loaded and the rows the model's tables hold then (a
// row a delta sets again counts once, a deleted one not at all).
func warmStart(ctx context.Context, cl *client.Client, loc string, tables map[string]int) (*export.Manifest, int64, error) {
	store, err := snapshot.OpenStore(loc, "")
	if err != nil {
		return nil, 0, err
	}
	defer store.Close()
	chain, _, err := export.Next(store, nil)
	if err != nil {
		return nil, 0, err
	}
	for _, m := range chain {
		for _, t := range m.Tables {
			dim, ok := tables[t.Name]
			if !ok || dim != t.Dim {
				return nil, 0, fmt.Errorf("export %d has table %q of dim %d; the model's is %d (declared: %v)", m.Seq, t.Name, t.Dim, dim, ok)
			}
			if err := loadTable(ctx, cl, store, m, t); err != nil {
				return nil, 0, err
			}
		}
	}
	last := chain[len(chain)-1]
	params, err := export.ReadDense(store, last, ctr.DenseName)
	if err != nil {
		return nil, 0, err
	}
	if err := cl.SetDense(ctx, ctr.DenseName, params); err != nil {
		return nil, 0, err
	}
	usage, err := cl.Tables(ctx)
	if err != nil {
		return nil, 0, err
	}
	var rows int64
	for _, u := range usage {
		if _, ok := tables[u.Name]; ok {
			rows += u.Rows + u.Tier.ColdRows
		}
	}
	return last, rows, nil
}

// loadTable loads table t of export m, warmBatch rows a request.
func loadTable(ctx context.Context, cl *client.Client, store snapshot.Store, m *export.Manifest, t export.Table) error {
	var ids, dels []uint64
	var vals []float32
	flush := func() error {
		err := cl.LoadRows(ctx, t.Name, t.Dim, ids, vals, dels)
		ids, vals, dels = ids[:0], vals[:0], dels[:0]
		return err
	}
	err := export.ReadTable(store, m, t.Name, func(id uint64, v []float32) error {
		if v == nil {
			dels = append(dels, id)
		} else {
			ids, vals = append(ids, id), append(vals, v...)
		}
		if len(ids)+len(dels) >= warmBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return err
}

// warmStartJob is the job's warm start (job.warm_start): worker 0 loads
// the export into a new model, and every worker waits for it at a
// barrier before training.
func (m *model) warmStartJob(ctx context.Context, env *job.Env, start Checkpoint) error {
	if env.Config.Job.WarmStart == "" || start.Applied > 0 || start.Epoch > 0 {
		return nil
	}
	if env.Index == 0 {
		tables := map[string]int{}
		for _, t := range env.Config.Model.Tables {
			tables[t.Name] = t.Dim
		}
		last, rows, err := warmStart(ctx, env.Client, env.Config.Job.WarmStart, tables)
		if err != nil {
			return fmt.Errorf("worker: warm start from %s: %w", env.Config.Job.WarmStart, err)
		}
		env.Say("warm start: loaded export %d (%d samples trained) from %s: the model holds %d rows and the dense parameters",
			last.Seq, last.Samples, env.Config.Job.WarmStart, rows)
	}
	if env.Workers() > 1 {
		env.Say("waiting for the warm start to be loaded")
		return env.Barrier(ctx, "warm-start")
	}
	return nil
}
