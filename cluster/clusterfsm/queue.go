package clusterfsm

import "fmt"

// queue holds the requests that came while a snapshot or an export was
// in progress, one of each kind, until the next CutSettled.
type queue struct {
	snapshot bool
	pin      bool // the queued snapshot is to be pinned
	rollback bool
	export   bool
}

// Queued returns the requests queued until the next CutSettled, in the
// order it replays them: the snapshot, the rollback, the export.
func (c *Core) Queued() []Queued {
	var out []Queued
	if c.queue.snapshot {
		out = append(out, Queued{Request: SnapshotRequest, Pin: c.queue.pin})
	}
	if c.queue.rollback {
		out = append(out, Queued{Request: RollbackRequest})
	}
	if c.queue.export {
		out = append(out, Queued{Request: ExportRequest})
	}
	return out
}

// mayCut reports whether a request (of kind req, pinned with pin) may
// start a cut now. It refuses it in o while the cluster is not serving,
// and queues it while a snapshot or an export is in progress (both pause
// the workers: cuts take turns): a second request of a kind already
// queued joins the first, a pinned one pinning the queued snapshot.
func (c *Core) mayCut(o *Output, req Request, pin bool) bool {
	switch {
	case c.state.Phase != Serving:
		o.Rejected = fmt.Errorf("%w: it is %v", ErrNotServing, c.state)
		return false
	case !c.busy():
		return true
	}
	switch req {
	case SnapshotRequest:
		c.queue.snapshot, c.queue.pin = true, c.queue.pin || pin
		pin = c.queue.pin
	case RollbackRequest:
		c.queue.rollback = true
	case ExportRequest:
		c.queue.export = true
	}
	c.emit(o, Queued{Request: req, Pin: pin})
	return false
}

// settle replays the queued requests once the driver settled the cut
// they waited for (CutSettled): it takes the queue whole and steps each
// request again, in the order snapshot, rollback, export. Each starts
// its cut, is queued again (a cut an earlier one started runs: a rollback
// or an export after a queued snapshot waits for the next CutSettled),
// or is refused (Refused, with what Step rejected it with: the cluster
// left SERVING or FAILED meanwhile, or no pinned snapshot is good).
func (c *Core) settle(o *Output) {
	q := c.queue
	c.queue = queue{}
	if q.snapshot {
		c.replay(o, SnapshotRequest, SnapshotRequested{Pin: q.pin})
	}
	if q.rollback {
		c.replay(o, RollbackRequest, RollbackRequested{})
	}
	if q.export {
		c.replay(o, ExportRequest, ExportRequested{})
	}
}

// replay steps the queued request ev (of kind req) again and adds what
// it asks to o, a refusal as a Refused.
func (c *Core) replay(o *Output, req Request, ev Event) {
	out := c.Step(ev)
	o.Actions = append(o.Actions, out.Actions...)
	if out.Rejected != nil {
		c.emit(o, Refused{Request: req, Err: out.Rejected})
	}
}
