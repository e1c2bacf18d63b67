package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/internal/cluster"
)

// pauser is the worker's side of the snapshot pause protocol (see package
// cluster): a goroutine follows the scheduler's pause requests; while the
// trainer runs, it pauses at its next batch boundary (requested, pause);
// when it does not, the request is acknowledged at once.
type pauser struct {
	cli            *clientv3.Client
	prefix, worker string
	log            *slog.Logger

	requested atomic.Uint64 // the latest pause request seen
	acked     atomic.Uint64 // the latest acknowledged; written under mu
	// version is the cluster version the worker trains at (set by the job
	// for each attempt); a resume at a higher one is a rollback.
	version atomic.Uint64

	mu       sync.Mutex
	training bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startPauser follows pause requests newer than the last resume until
// close. Until startTraining, requests are acknowledged at once (the
// worker pushes nothing yet).
func startPauser(ctx context.Context, cli *clientv3.Client, prefix, worker string, log *slog.Logger) (*pauser, error) {
	resp, err := cli.Get(ctx, cluster.ResumeKey(prefix))
	if err != nil {
		return nil, err
	}
	var after uint64
	if len(resp.Kvs) > 0 {
		if r, ok := cluster.ParseResume(resp.Kvs[0].Value); ok && !r.Failed {
			after = r.Seq
		}
	}
	p := &pauser{cli: cli, prefix: prefix, worker: worker, log: log}
	p.acked.Store(after)
	p.requested.Store(after)
	ctx, p.cancel = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		cluster.WatchPauses(ctx, cli, prefix, after, func(seq uint64) error {
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
func (p *pauser) ack(ctx context.Context, seq uint64) error {
	if seq <= p.acked.Load() {
		return nil
	}
	if err := cluster.AckPause(ctx, p.cli, p.prefix, p.worker, seq); err != nil {
		p.log.Warn("acknowledging a snapshot pause failed", "seq", seq, "err", err)
		return err
	}
	p.acked.Store(seq)
	return nil
}

// startTraining makes later requests wait for the trainer's pause.
func (p *pauser) startTraining() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.training = true
}

// isRequested is Options.PauseRequested.
func (p *pauser) isRequested() bool { return p.requested.Load() > p.acked.Load() }

// ErrRestored is returned (wrapped) by a worker's pause when training
// resumes at a higher cluster version: the model was rolled back to a
// snapshot meanwhile, and the worker starts over from the reader
// positions the restored model holds.
var ErrRestored = errors.New("worker: the cluster was restored from a snapshot")

// pause is Options.Pause: acknowledge the request, wait for the resume.
func (p *pauser) pause(ctx context.Context) error {
	p.mu.Lock()
	seq := p.requested.Load()
	err := p.ack(ctx, seq)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	r, err := cluster.WaitResume(ctx, p.cli, p.prefix, seq)
	if err != nil {
		return err
	}
	if cur := p.version.Load(); r.Version > cur {
		return fmt.Errorf("%w: version %d resumes, trained at %d", ErrRestored, r.Version, cur)
	}
	return nil
}

// stopTraining makes every later request, and one pending now, be
// acknowledged at once.
func (p *pauser) stopTraining(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.training = false
	p.ack(ctx, p.requested.Load())
}

// close stops following requests.
func (p *pauser) close() {
	p.cancel()
	p.wg.Wait()
}
