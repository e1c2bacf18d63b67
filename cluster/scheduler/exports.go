package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/clusterfsm"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/snapshot"
)

// ErrNoExportStore is the error of an export asked of a scheduler without
// an export store.
var ErrNoExportStore = errors.New("scheduler: no export store (set export.store in the job's config)")

// expOp is the model export in progress.
type expOp struct {
	id       clusterfsm.ExportID
	pauseSeq uint64
	paused   time.Time // when the workers were asked to pause
	cancel   context.CancelFunc
}

// exportChain is the scheduler's view of the export store's chain, owned
// by the run goroutine: the last export committed, the full export its
// chain starts at, and the exports since that full one.
type exportChain struct {
	last, full uint64
	since      int
}

// loadExportChain reads the chain's end from the export store, so that a
// restarted or new leader goes on with deltas (a shard without the base
// refuses one, and the export is taken full instead).
func (s *Scheduler) loadExportChain() exportChain {
	p := &s.opts.Config.Export
	if p.Store == "" {
		return exportChain{}
	}
	store, err := snapshot.OpenStore(p.Store, "")
	if err != nil {
		s.log.Warn("export store", "store", p.Store, "err", err)
		return exportChain{}
	}
	defer store.Close()
	if removed, err := export.RemoveIncomplete(store); len(removed) > 0 || err != nil {
		s.log.Info("removed incomplete exports", "seqs", removed, "err", err)
	}
	// The manifests only: verifying every file of every export (Next)
	// would read the whole store at each election. A delta onto a damaged
	// export is refused by serving, and the next full export mends that.
	seqs, err := export.Exports(store)
	if err != nil {
		return exportChain{}
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		m, err := export.ReadManifest(store, seqs[i])
		if err != nil {
			continue
		}
		c := exportChain{last: m.Seq, full: m.Full}
		for _, seq := range seqs[:i+1] { // the deltas since the full one, m included
			if seq > m.Full {
				c.since++
			}
		}
		return c
	}
	return exportChain{}
}

// startExport asks the workers to pause and starts the export's
// goroutine: it waits for their acknowledgements, has every shard write
// its part, commits the manifest and prunes; finish resumes the workers.
func (s *Scheduler) startExport(ctx context.Context, a clusterfsm.TakeExport) {
	m := s.maps[a.Version]
	s.pauseSeq++
	op := &expOp{id: a.ID, pauseSeq: s.pauseSeq, paused: time.Now()}
	ectx, cancel := context.WithCancel(ctx)
	op.cancel = cancel
	s.exp = op
	s.retry(ctx, "ask the workers to pause", func(ctx context.Context) error {
		return s.conn.PutPause(ctx, op.pauseSeq)
	})
	workers, chain, request := s.liveWorkers(), s.chain, s.lastExportRequest
	s.opsWG.Add(1)
	go func() {
		defer s.opsWG.Done()
		defer cancel()
		res := controlplane.ExportResult{Time: time.Now().UTC(), Request: request}
		man, err := s.exportOnce(ectx, m, op, workers, chain, &res)
		if err != nil {
			res.Error = err.Error()
		}
		s.report(ctx, opDone{ev: clusterfsm.ExportDone{ID: a.ID, Err: err}, exp: &res, expMan: man})
	}()
}

// exportOnce waits for the workers to pause for op, has every shard of m
// write its part of the next export (a delta onto chain's last export, or
// a full one: the first, every Export.FullEvery-th, and whenever a shard
// has no base), commits the manifest and prunes old exports. A failed
// attempt's files are removed. The caller resumes the workers.
func (s *Scheduler) exportOnce(ctx context.Context, m *ams.ShardMap, op *expOp, workers []string, chain exportChain, res *controlplane.ExportResult) (*export.Manifest, error) {
	if m == nil {
		return nil, errors.New("no shard map for the export's version")
	}
	p := &s.opts.Config.Export
	store, err := snapshot.OpenStore(p.Store, "")
	if err != nil {
		return nil, err
	}
	defer store.Close()
	if _, err := s.waitPaused(ctx, workers, op.pauseSeq); err != nil {
		return nil, err
	}
	cl, err := s.newClient(m)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	readers, err := cl.GetState(ctx, ams.StateReaderPrefix)
	if err != nil {
		return nil, err
	}
	seqs, err := export.Exports(store)
	if err != nil {
		return nil, err
	}
	o := client.ExportOptions{Store: p.Store, Seq: 1, Job: s.jobID, Samples: checkpoint.Applied(readers),
		Quant: p.QuantMap(s.opts.Config.TableNames())}
	if len(seqs) > 0 {
		o.Seq = seqs[len(seqs)-1] + 1
	}
	if chain.last != 0 && chain.since+1 < p.FullEvery {
		o.Base, o.Full = chain.last, chain.full
	}
	start := time.Now()
	man, err := cl.WriteExport(ctx, o)
	if err != nil && o.Base != 0 && errors.Is(err, ams.ErrNoExportBase) {
		s.log.Info("a shard has no base for a delta: taking a full export", "seq", o.Seq+1, "err", err)
		if _, rerr := export.RemoveIncomplete(store); rerr != nil {
			s.log.Warn("removing the failed export's files", "seq", o.Seq, "err", rerr)
		}
		o.Seq, o.Base, o.Full = o.Seq+1, 0, 0
		man, err = cl.WriteExport(ctx, o)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Seq = o.Seq
	if err != nil {
		if _, rerr := export.RemoveIncomplete(store); rerr != nil {
			s.log.Warn("removing the failed export's files", "seq", o.Seq, "err", rerr)
		}
		return nil, err
	}
	res.Kind, res.Base, res.Samples, res.Bytes = man.Kind, man.Base, man.Samples, man.Bytes()
	res.Rows, res.Deletes = man.Rows()
	res.Removed, err = export.Prune(store, p.Keep)
	if err != nil {
		s.log.Warn("pruning old exports", "err", err)
	}
	return man, nil
}

// exported records a finished export: the chain grows (or starts anew
// from a full one) and the result is logged and recorded for
// RequestExport; the workers are resumed unless the cluster left SERVING
// (its recovery resumes them).
func (s *Scheduler) exported(ctx context.Context, d opDone) {
	op := s.exp
	s.exp = nil
	done := d.ev.(clusterfsm.ExportDone)
	s.step(ctx, d.ev)
	s.resumeCut(ctx, op.pauseSeq)
	d.exp.PauseSeconds = time.Since(op.paused).Seconds()
	if man := d.expMan; done.Err == nil && man != nil {
		if man.Kind == export.KindFull {
			s.chain = exportChain{last: man.Seq, full: man.Seq}
		} else {
			s.chain = exportChain{last: man.Seq, full: man.Full, since: s.chain.since + 1}
		}
		s.log.Info("export written", "seq", man.Seq, "kind", man.Kind, "rows", d.exp.Rows, "deletes", d.exp.Deletes,
			"bytes", d.exp.Bytes, "seconds", d.exp.Seconds, "pause_seconds", d.exp.PauseSeconds, "store", s.opts.Config.Export.Store)
	} else {
		s.log.Warn("export failed", "seq", d.exp.Seq, "err", done.Err)
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	if err := s.conn.PutExportResult(pctx, *d.exp); err != nil {
		s.log.Warn("recording the export result failed", "err", err)
	}
	cancel()
	s.step(ctx, clusterfsm.CutSettled{}) // the requests queued meanwhile go
}

// requestExport feeds an on-demand export request to the core; a refused
// one is answered at once through the export result
// (controlplane.RequestExport), one the core queued (during a cut) when
// it runs or is refused (clusterfsm.Refused).
func (s *Scheduler) requestExport(ctx context.Context) {
	var err error
	if s.opts.Config.Export.Store == "" {
		err = ErrNoExportStore
	} else {
		err = s.step(ctx, clusterfsm.ExportRequested{})
	}
	if err != nil {
		s.refuseExport(ctx, err)
	}
}

// refuseExport answers the newest export request with err.
func (s *Scheduler) refuseExport(ctx context.Context, err error) {
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if perr := s.conn.PutExportResult(pctx, controlplane.ExportResult{Time: time.Now().UTC(), Error: err.Error(),
		Request: s.lastExportRequest}); perr != nil {
		s.log.Warn("recording the export result failed", "err", perr)
	}
}
