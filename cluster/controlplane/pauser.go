package controlplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Pauser is the worker's side of the pause protocol (pause.go): a goroutine follows the scheduler's pause requests; while the
// trainer runs, it pauses at its next batch boundary (requested, pause);
// when it does not, the request is acknowledged at once.
type Pauser struct {
	conn   *Conn
	worker string
	log    *slog.Logger

	requested atomic.Uint64 // the latest pause request seen
	acked     atomic.Uint64 // the latest acknowledged; written under mu
	// version is the cluster version the worker trains at (SetVersion, for
	// each attempt); a resume at a higher one is a rollback.
	version atomic.Uint64

	mu       sync.Mutex
	training bool
	// outlive: the pauser outlives its job's ctx (StartPauser).
	outlive bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartPauser follows pause requests newer than the last resume until
// ctx ends or Close; with outlive, until Close only: a worker stopped
// (its ctx cancelled) then still acknowledges the pauses of the snapshot
// that saves its model (job.Options.SaveOnStop), and StopTraining
// acknowledges a pending one after ctx ended too. Until StartTraining,
// requests are acknowledged at once (the worker pushes nothing yet).
func (c *Conn) StartPauser(ctx context.Context, worker string, log *slog.Logger, outlive bool) (*Pauser, error) {
	r, ok, err := c.LastResume(ctx)
	if err != nil {
		return nil, err
	}
	var after uint64
	if ok && !r.Failed {
		after = r.Seq
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pauser{conn: c, worker: worker, log: log, outlive: outlive}
	p.acked.Store(after)
	p.requested.Store(after)
	if outlive {
		ctx = context.WithoutCancel(ctx)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		c.WatchPauses(ctx, after, func(seq uint64) error {
			p.requested.Store(seq)
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.training {
				p.ack(ctx, seq)
			}
			return nil
		})
	}()
	return p, nil
}

// ack acknowledges seq; the caller holds mu.
func (p *Pauser) ack(ctx context.Context, seq uint64) error {
	if seq <= p.acked.Load() {
		return nil
	}
	if err := p.conn.AckPause(ctx, p.worker, seq); err != nil {
		p.log.Warn("acknowledging a snapshot pause failed", "seq", seq, "err", err)
		return err
	}
	p.acked.Store(seq)
	return nil
}

// StartTraining makes later requests wait for the trainer's pause. A
// request acknowledged while the worker was not training holds it until
// its resume (the scheduler may be writing the snapshot that pause is
// for): StartTraining waits for that resume first, acknowledging newer
// requests at once meanwhile. It returns an error wrapping ErrRestored
// when training resumes at a higher cluster version than SetVersion gave,
// or ErrClusterFailed; the worker is then not training.
func (p *Pauser) StartTraining(ctx context.Context) error {
	for {
		p.mu.Lock()
		seq := p.acked.Load()
		p.mu.Unlock()
		if seq > 0 {
			r, err := p.conn.WaitResume(ctx, seq)
			if err != nil {
				return err
			}
			if cur := p.version.Load(); r.Version > cur {
				return fmt.Errorf("%w: version %d resumes, trained at %d", ErrRestored, r.Version, cur)
			}
		}
		p.mu.Lock()
		if p.acked.Load() == seq { // no request acknowledged since: none holds the worker
			p.training = true
			p.mu.Unlock()
			return nil
		}
		p.mu.Unlock()
	}
}

// Requested reports whether a pause request waits for the trainer.
func (p *Pauser) Requested() bool { return p.requested.Load() > p.acked.Load() }

// Pending returns the latest pause request seen (0: none).
func (p *Pauser) Pending() uint64 { return p.requested.Load() }

// Pause acknowledges the latest request and waits for its resume (see
// PauseFor).
func (p *Pauser) Pause(ctx context.Context) error { return p.PauseFor(ctx, p.requested.Load()) }

// PauseFor acknowledges request seq, once the trainer has done what that
// pause asks of it (a worker that keeps state of its own writes it into
// the snapshot first), and waits for its resume. It returns an error
// wrapping ErrRestored when training resumes at a higher cluster version
// than SetVersion gave. A request newer than seq stays pending.
func (p *Pauser) PauseFor(ctx context.Context, seq uint64) error {
	p.mu.Lock()
	err := p.ack(ctx, seq)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	r, err := p.conn.WaitResume(ctx, seq)
	if err != nil {
		return err
	}
	if cur := p.version.Load(); r.Version > cur {
		return fmt.Errorf("%w: version %d resumes, trained at %d", ErrRestored, r.Version, cur)
	}
	return nil
}

// StopTraining makes every later request, and one pending now, be
// acknowledged at once. The one pending is acknowledged with ctx, or, for
// a pauser that outlives its job's ctx (StartPauser) when ctx has ended
// (a stopped worker), within stopAckTimeout: a snapshot that waits for it
// (the stop's own, job.Options.SaveOnStop) would wait for ever otherwise.
func (p *Pauser) StopTraining(ctx context.Context) {
	actx := ctx
	if ctx.Err() != nil && p.outlive {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(context.WithoutCancel(ctx), stopAckTimeout)
		defer cancel()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.training = false
	p.ack(actx, p.requested.Load())
}

// stopAckTimeout bounds StopTraining's acknowledgement.
const stopAckTimeout = 10 * time.Second

// SetVersion sets the cluster version the worker trains at.
func (p *Pauser) SetVersion(v uint64) { p.version.Store(v) }

// Version returns the version SetVersion gave.
func (p *Pauser) Version() uint64 { return p.version.Load() }

// Close stops following requests.
func (p *Pauser) Close() {
	p.cancel()
	p.wg.Wait()
}
