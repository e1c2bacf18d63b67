package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/job"
)

// What the status page keeps in memory.
const (
	// historyLen is the progress reports kept per worker: 20 minutes at
	// the default train.progress_every of 2s.
	historyLen = 600
	// resultsLen is the snapshot results and the export results kept.
	resultsLen = 20
	// maxWorkers bounds the workers whose history is kept: beyond it the
	// one whose last report is the oldest is forgotten.
	maxWorkers = 256
)

// ring keeps the last len(buf) values pushed. It is not safe for
// concurrent use.
type ring[T any] struct {
	buf   []T
	start int // the oldest value's index, once full
	n     int
}

func newRing[T any](size int) *ring[T] { return &ring[T]{buf: make([]T, size)} }

// push adds v, dropping the oldest value when full.
func (r *ring[T]) push(v T) {
	if r.n < len(r.buf) {
		r.buf[r.n] = v
		r.n++
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// items returns a copy of the values, oldest first.
func (r *ring[T]) items() []T {
	out := make([]T, 0, r.n)
	if r.n < len(r.buf) {
		return append(out, r.buf[:r.n]...)
	}
	return append(append(out, r.buf[r.start:]...), r.buf[:r.start]...)
}

// last returns the newest value, and false when there is none.
func (r *ring[T]) last() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	if r.n < len(r.buf) {
		return r.buf[r.n-1], true
	}
	return r.buf[(r.start+len(r.buf)-1)%len(r.buf)], true
}

// history is one worker's progress reports.
type history struct {
	rev     int64 // of the newest report taken
	reports *ring[job.Progress]
}

// board is the status page's memory, fed the control plane's status
// updates (controlplane.WatchStatus): each worker's last historyLen
// progress reports, and the last resultsLen snapshot and export results.
// An update of a revision already taken for its key (read again after a
// broken watch) changes nothing. It does no I/O and is not safe for
// concurrent use; statusBoard wraps it.
type board struct {
	workers          map[string]*history
	snapRev, expRev  int64
	snapshots        *ring[controlplane.SnapshotResult]
	exports          *ring[controlplane.ExportResult]
	historyLen, maxW int
}

func newBoard(historyLen, results, maxWorkers int) *board {
	return &board{workers: map[string]*history{}, snapshots: newRing[controlplane.SnapshotResult](results),
		exports: newRing[controlplane.ExportResult](results), historyLen: historyLen, maxW: maxWorkers}
}

// apply takes one update; it reports whether it changed the board. A
// report that does not decode is dropped.
func (b *board) apply(u controlplane.StatusUpdate) bool {
	switch {
	case u.Snapshot != nil:
		if u.Rev <= b.snapRev {
			return false
		}
		b.snapRev = u.Rev
		b.snapshots.push(*u.Snapshot)
	case u.Export != nil:
		if u.Rev <= b.expRev {
			return false
		}
		b.expRev = u.Rev
		b.exports.push(*u.Export)
	case u.Worker != "":
		h := b.workers[u.Worker]
		if h != nil && u.Rev <= h.rev {
			return false
		}
		var p job.Progress
		if json.Unmarshal(u.Progress, &p) != nil {
			return false
		}
		if h == nil {
			b.forgetOldest()
			h = &history{reports: newRing[job.Progress](b.historyLen)}
			b.workers[u.Worker] = h
		}
		p.Worker = u.Worker
		h.rev = u.Rev
		h.reports.push(p)
	default:
		return false
	}
	return true
}

// forgetOldest makes room for one more worker: when maxW are kept, the one
// whose newest report is the oldest goes.
func (b *board) forgetOldest() {
	if len(b.workers) < b.maxW {
		return
	}
	var oldest string
	var at time.Time
	for name, h := range b.workers {
		p, _ := h.reports.last()
		if oldest == "" || p.Time.Before(at) || p.Time.Equal(at) && name < oldest {
			oldest, at = name, p.Time
		}
	}
	delete(b.workers, oldest)
}

// boardView is a copy of the board: the workers by name, each with its
// reports oldest first; the results newest first.
type boardView struct {
	Workers   []workerHistory
	Snapshots []controlplane.SnapshotResult
	Exports   []controlplane.ExportResult
}

// workerHistory is one worker's reports, oldest first.
type workerHistory struct {
	Name    string
	Reports []job.Progress
}

// view copies the board.
func (b *board) view() boardView {
	var v boardView
	for name, h := range b.workers {
		v.Workers = append(v.Workers, workerHistory{Name: name, Reports: h.reports.items()})
	}
	slices.SortFunc(v.Workers, func(a, b workerHistory) int { return compareNames(a.Name, b.Name) })
	v.Snapshots = b.snapshots.items()
	slices.Reverse(v.Snapshots)
	v.Exports = b.exports.items()
	slices.Reverse(v.Exports)
	return v
}

// compareNames orders names with a numeric suffix by its number
// (worker-2 before worker-10), others as strings.
func compareNames(a, b string) int {
	ia, ib := lastNumber(a), lastNumber(b)
	if ia.prefix == ib.prefix && ia.ok && ib.ok && ia.n != ib.n {
		if ia.n < ib.n {
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type numbered struct {
	prefix string
	n      int
	ok     bool
}

// lastNumber splits "worker-12" into "worker-" and 12.
func lastNumber(s string) numbered {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return numbered{prefix: s}
	}
	n := 0
	for _, c := range s[i:] {
		n = 10*n + int(c-'0')
	}
	return numbered{prefix: s[:i], n: n, ok: true}
}

// statusBoard is the board of a running scheduler: a goroutine of the
// scheduler's feeds it (follow), the status page reads it.
type statusBoard struct {
	mu sync.Mutex // protects b
	b  *board
}

func (s *statusBoard) apply(u controlplane.StatusUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.apply(u)
}

func (s *statusBoard) view() boardView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.view()
}

// followStatus feeds the board the control plane's status updates until
// ctx ends; a broken watch is started over after a pause (the board
// drops what it has taken already).
func (s *Scheduler) followStatus(ctx context.Context) {
	wait := 100 * time.Millisecond
	for {
		err := s.conn.WatchStatus(ctx, s.board.apply)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("status watch broke, starting over", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxRetry)
	}
}
