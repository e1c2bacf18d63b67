package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/cluster/controlplane"
)

// Recoverable reports whether a failed attempt may go on after a restore:
// the cluster was rolled back, or a request failed the way requests to a
// dead, replaced or restored shard fail. The AMS client's errors wrap the
// same sentinels over gRPC and on direct calls (see amspb.Errors).
func Recoverable(err error) bool {
	for _, target := range []error{ErrRestored, ErrLeaseLost, ams.ErrStaleVersion, ams.ErrUnavailable, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, target) {
			return true
		}
	}
	return etcdTransient(err)
}

// etcdTransient reports an etcd request (a pause, a barrier) that failed
// as the AMS requests above do: etcd's client reports it as a gRPC status
// of one of their codes.
func etcdTransient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// Barrier waits until every worker of the job has reached the barrier
// named name at the attempt's cluster version, or returns an error
// wrapping ErrRestored when the cluster is rolled back meanwhile: this
// worker's last samples may be gone from the restored model, so it trains
// them again from its checkpoint. A job of one worker passes at once.
func (e *Env) Barrier(ctx context.Context, name string) error {
	if e.Workers() == 1 {
		return nil
	}
	version := e.Version
	bctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := e.Conn.WaitRestored(bctx, version)
		if err == nil {
			cancel(fmt.Errorf("%w: version %d resumes, trained at %d", ErrRestored, r.Version, version))
		} else if errors.Is(err, controlplane.ErrClusterFailed) {
			cancel(err)
		}
	}()
	reg, err := e.Registration.Live(bctx)
	if err != nil {
		return fmt.Errorf("job: barrier %s: %w", name, err)
	}
	err = e.Conn.Barrier(bctx, reg, fmt.Sprintf("%s-v%d", name, version), e.Workers())
	if cause := context.Cause(bctx); err != nil && ctx.Err() == nil && cause != nil {
		return cause
	}
	return err
}
