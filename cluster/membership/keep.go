package membership

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keepRetry is the pause between two attempts to register again.
const keepRetry = time.Second

// Kept is a registration kept alive across lost leases: whenever the
// current one is lost (etcd unreachable for longer than the TTL, or the
// lease revoked), it registers the member again, the same Member (the
// same life: PID and start time), as soon as etcd answers, until Close.
// The cluster saw the old lease go and treats it as a death; what the
// process does about it is its own business (a shard keeps its rows, a
// worker waits for the cluster's restore), but it does not die of it.
// It is safe for concurrent use.
type Kept struct {
	cli    *clientv3.Client
	prefix string
	member Member
	ttl    time.Duration
	log    *slog.Logger

	mu    sync.Mutex
	cur   *Registration
	count int // registrations made

	renew chan chan struct{} // Renew's requests, answered once registered again
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error
}

// Keep registers m (Register) and keeps it registered until Close. ctx
// bounds the first registration only; log (nil: nowhere) gets a line per
// loss and per registration made again.
func Keep(ctx context.Context, cli *clientv3.Client, prefix string, m Member, ttl time.Duration, log *slog.Logger) (*Kept, error) {
	r, err := Register(ctx, cli, prefix, m, ttl)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Kept{cli: cli, prefix: prefix, member: r.Member(), ttl: ttl, log: log, cur: r, count: 1,
		renew: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.run()
	return k, nil
}

// Current returns the current registration: its Lost channel closes when
// it is lost, after which Current returns the next one once it is made.
func (k *Kept) Current() *Registration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur
}

// Live returns the current registration once it is live: the current
// one, or, when that is lost, the next one once it is made (or ctx's
// error).
func (k *Kept) Live(ctx context.Context) (*Registration, error) {
	for {
		r := k.Current()
		select {
		case <-r.Lost():
		default:
			return r, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-k.done:
			return nil, fmt.Errorf("membership: %s: no longer kept registered", k.Member())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Renew leaves the cluster as a dead member does (Abandon) and registers
// again as a new life (a new start time): the cluster takes the member's
// state for lost. A worker whose model holds pushes its checkpoint does
// not count renews, so that the cluster rolls the model back. It returns
// once registered again, or with ctx's error.
func (k *Kept) Renew(ctx context.Context) error {
	answer := make(chan struct{})
	select {
	case k.renew <- answer:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-k.done:
		return fmt.Errorf("membership: %s: no longer kept registered", k.Member())
	}
	select {
	case <-answer:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Registrations returns how many registrations were made: 1, plus one per
// loss registered again.
func (k *Kept) Registrations() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.count
}

// Member returns the member kept registered.
func (k *Kept) Member() Member {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.member
}

func (k *Kept) run() {
	defer close(k.done)
	for {
		reg := k.Current()
		var answer chan struct{}
		select {
		case <-k.stop:
			return
		case <-reg.Lost():
			k.log.Warn("lost the etcd lease: registering again", "member", k.member.String())
			reg.Close() // stops its keep-alive; its lease is gone
		case answer = <-k.renew:
			reg.Abandon() // a death, seen at once
			k.mu.Lock()
			k.member.Started = time.Now()
			k.mu.Unlock()
			k.log.Warn("leaving as a dead member and registering as a new life", "member", k.member.String())
		}
		next, ok := k.again()
		if !ok {
			return
		}
		k.mu.Lock()
		k.cur = next
		k.count++
		k.mu.Unlock()
		if answer != nil {
			close(answer)
		}
	}
}

// again registers the member until it succeeds or Close is called.
func (k *Kept) again() (*Registration, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-k.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, 2*k.ttl+keepRetry)
		r, err := Register(actx, k.cli, k.prefix, k.member, k.ttl)
		acancel()
		if err == nil {
			k.log.Info("registered again", "member", k.member.String(), "attempts", attempt)
			return r, true
		}
		if attempt == 1 || attempt%10 == 0 {
			k.log.Warn("cannot register again yet", "member", k.member.String(), "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(keepRetry):
		}
	}
}

// Close stops keeping the registration and leaves the cluster gracefully
// (Registration.Close of the current one).
func (k *Kept) Close() error { return k.end(true) }

// Abandon stops keeping the registration and leaves as a dead member does
// (Registration.Abandon of the current one).
func (k *Kept) Abandon() error { return k.end(false) }

func (k *Kept) end(graceful bool) error {
	k.once.Do(func() {
		close(k.stop)
		<-k.done // no registration is made after this
		if graceful {
			k.err = k.cur.Close()
		} else {
			k.err = k.cur.Abandon()
		}
	})
	return k.err
}
