package job

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// publishTimeout bounds one put of a progress report: a report that etcd
// does not take in time is dropped (the next one replaces it).
const publishTimeout = 2 * time.Second

// publisher puts the worker's latest progress report in etcd
// (controlplane.PutProgress), under its current registration's lease, for
// the schedulers' status pages. It puts from a goroutine of its own, so
// that the training goroutine that offers a report never waits for etcd:
// a report offered while another is being put waits in a slot of one,
// where a later report replaces it (latest wins).
type publisher struct {
	conn *controlplane.Conn
	reg  *membership.Kept
	log  *slog.Logger

	mu struct {
		sync.Mutex
		next *Progress // the report waiting to be put
	}
	wake chan struct{} // a report is waiting (buffered, 1)
	stop chan struct{}
	done chan struct{}
}

// startPublisher starts the publisher's goroutine; close stops it.
func startPublisher(conn *controlplane.Conn, reg *membership.Kept, log *slog.Logger) *publisher {
	p := &publisher{conn: conn, reg: reg, log: log, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// wrap returns an OnProgress that offers each report to p, then hands it
// to user (when not nil).
func (p *publisher) wrap(user func(Progress)) func(Progress) {
	return func(r Progress) {
		p.offer(r)
		if user != nil {
			user(r)
		}
	}
}

// offer makes r the report to put next; it never blocks.
func (p *publisher) offer(r Progress) {
	p.mu.Lock()
	p.mu.next = &r
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // already woken: the waiting report was replaced
	}
}

// take returns the waiting report, if any, and empties the slot.
func (p *publisher) take() *Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.mu.next
	p.mu.next = nil
	return r
}

func (p *publisher) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			p.put(p.take()) // the last report, when it was not put yet
			return
		case <-p.wake:
			p.put(p.take())
		}
	}
}

// put stores r under the current registration's lease (nothing while the
// worker is registering again: that report is dropped).
func (p *publisher) put(r *Progress) {
	reg := p.reg.Current()
	if r == nil || reg == nil {
		return
	}
	select {
	case <-reg.Lost():
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := p.conn.PutProgress(ctx, reg, r); err != nil {
		p.log.Debug("progress report not published", "err", err)
	}
}

// close stops the goroutine, after it put the last report offered.
func (p *publisher) close() {
	close(p.stop)
	<-p.done
}
