package job

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
)

// TestRecoverable checks which failures a worker waits out with a
// restore: the same AMS errors whether a shard answered over gRPC (a
// status of the error table, turned back by the client) or in this
// process (the shard's own error), the context's errors, and etcd's
// transient statuses.
func TestRecoverable(t *testing.T) {
	overGRPC := func(err error) error {
		return fmt.Errorf("ams client: pull from shard ams-0: %w", amspb.FromStatus(amspb.ToStatus(err)))
	}
	direct := func(err error) error { return fmt.Errorf("ams client: pull from shard ams-0: %w", err) }
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("shard: %w", ams.ErrStaleVersion), true},
		{ams.ErrClosed, true},
		{ams.ErrUnavailable, true},
		{context.Canceled, true},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("shard: %w", ams.ErrBadRequest), false},
		{fmt.Errorf("shard: %w", ams.ErrUnknownTable), false},
		{errors.New("disk full"), false},
	} {
		for path, wrap := range map[string]func(error) error{"grpc": overGRPC, "direct": direct} {
			if got := Recoverable(wrap(tc.err)); got != tc.want {
				t.Errorf("%s: Recoverable(%v) = %v, want %v", path, tc.err, got, tc.want)
			}
		}
	}
	if !Recoverable(fmt.Errorf("job: pause: %w", ErrRestored)) {
		t.Error("a rollback is not recoverable")
	}
	if !Recoverable(fmt.Errorf("job: pause: %w", status.Error(codes.Unavailable, "etcd: no leader"))) {
		t.Error("an etcd request that failed as unavailable is not recoverable")
	}
	if Recoverable(status.Error(codes.PermissionDenied, "etcd: denied")) {
		t.Error("an etcd request that was denied is recoverable")
	}
}
