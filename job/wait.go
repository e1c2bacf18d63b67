package job

import (
	"context"
	"strings"
	"time"
)

// WaitNoticeEvery is how often a worker that waits for the scheduler (the
// shard map, its file assignment, its partition deal) says again what it
// waits for and where.
const WaitNoticeEvery = 5 * time.Second

// WaitSaying calls wait until it returns, with a context that ends every
// WaitNoticeEvery (wait is called again then); each time, it says that
// the worker still waits for what, under which key prefix on which etcd,
// and hint (what would end the wait). wait must return when its context
// ends. The error is wait's last (ctx's when ctx ended).
func (e *Env) WaitSaying(ctx context.Context, what, hint string, wait func(context.Context) error) error {
	start := time.Now()
	for {
		wctx, cancel := context.WithTimeout(ctx, WaitNoticeEvery)
		err := wait(wctx)
		expired := wctx.Err() != nil
		cancel()
		if err == nil || !expired || ctx.Err() != nil {
			return err
		}
		e.Say("still waiting after %v for %s under %s on etcd %s: %s", time.Since(start).Round(time.Second), what,
			e.Prefix, strings.Join(e.Etcd.Endpoints(), ","), hint)
	}
}
