package pullbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/xdlgo/xps/cmd/pullbench/internal/pullbench"
)

// TestRun runs both sides briefly against a small server: each completes
// requests of the right size, with one and with several in flight.
func TestRun(t *testing.T) {
	srv, err := pullbench.Start(pullbench.ServerOptions{Rows: 10000, Dim: 8, Stripes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	for _, inflight := range []int{1, 3} {
		o := pullbench.RunOptions{AMSAddr: srv.AMSAddr(), TCPAddr: srv.TCPAddr(), Rows: 10000, Dim: 8, IDs: 2000,
			InFlight: inflight, Duration: 200 * time.Millisecond}
		for _, run := range []func(context.Context, pullbench.RunOptions) (pullbench.Result, error){pullbench.RunAMS, pullbench.RunTCP} {
			r, err := run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests == 0 || r.ReplyBytes != 2000*8*4 || r.BytesPerS <= 0 || r.InFlight != inflight {
				t.Errorf("%+v", r)
			}
			t.Logf("%+v", r)
		}
	}
	// A client declaring another width is refused with a clear error.
	if _, err := pullbench.RunAMS(ctx, pullbench.RunOptions{AMSAddr: srv.AMSAddr(), Rows: 10000, Dim: 16,
		Duration: 50 * time.Millisecond}); err == nil {
		t.Error("RunAMS with the wrong dim succeeded")
	}
}
