package clusterfsm

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// chooser is the source of choices of the random event generator: a seeded
// math/rand in TestRandomSequences, the fuzzer's bytes in FuzzCore.
type chooser interface{ IntN(n int) int }

// byteChooser takes choices from bytes, then zeros.
type byteChooser struct{ b []byte }

func (c *byteChooser) IntN(n int) int {
	if len(c.b) == 0 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

func randomOptions(r chooser) Options {
	o := Options{
		Shards:              1 + r.IntN(3),
		Workers:             r.IntN(3),
		SkipInitialSnapshot: r.IntN(3) == 0,
		Keep:                r.IntN(4),
	}
	if r.IntN(2) == 0 {
		o.SnapshotEvery = time.Duration(1+r.IntN(120)) * time.Second
	}
	for s := 1; s <= 3; s++ {
		if r.IntN(4) == 0 {
			o.Snapshots = append(o.Snapshots, SnapshotID(s))
		}
	}
	if r.IntN(3) == 0 {
		o.LastVersion = uint64(r.IntN(10))
	}
	if r.IntN(3) == 0 {
		o.RejoinWait = time.Duration(1+r.IntN(90)) * time.Second
	}
	if r.IntN(3) == 0 {
		o.Adopt = randomAdopted(r, o.Shards)
		o.LastVersion = min(o.LastVersion, o.Adopt.Version)
	}
	return o
}

// randomAdopted returns a cluster to adopt: a map of shards ids among the
// ids randomEvent uses, a deal among some workers, some of whom left.
func randomAdopted(r chooser, shards int) *Adopted {
	a := &Adopted{Version: uint64(1 + r.IntN(10)), Serving: r.IntN(4) != 0}
	a.Stopped = !a.Serving && r.IntN(2) == 0
	ids := make([]string, shards+2)
	for i := range ids {
		ids[i] = "ams-" + strconv.Itoa(i)
	}
	for i := len(ids) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		ids[i], ids[j] = ids[j], ids[i]
	}
	a.Shards = ids[:shards]
	for w := range 3 {
		id := "worker-" + strconv.Itoa(w)
		if r.IntN(2) == 0 {
			a.Workers = append(a.Workers, id)
		}
		if r.IntN(6) == 0 {
			a.Left = append(a.Left, id)
		}
	}
	if r.IntN(2) == 0 {
		a.MaxIncarnation = int64(2 + r.IntN(3))
	}
	if r.IntN(2) == 0 { // lives recorded for some members
		a.Lives = map[string]string{}
		for _, id := range a.Shards {
			if r.IntN(3) != 0 {
				a.Lives[string(KindAMS)+"/"+id] = "l" + strconv.Itoa(r.IntN(2))
			}
		}
		for _, id := range a.Workers {
			if r.IntN(3) != 0 {
				a.Lives[string(KindWorker)+"/"+id] = "l" + strconv.Itoa(r.IntN(2))
			}
		}
	}
	return a
}

// initialSync returns the joins a driver feeds before its first tick when
// adopting a: most of the adopted shards and dealt workers, some others.
func initialSync(r chooser, a *Adopted, shards int) []Event {
	var evs []Event
	join := func(kind Kind, id string) {
		inc := int64(1)
		if r.IntN(4) == 0 {
			inc = int64(1 + r.IntN(4))
		}
		m := Member{Kind: kind, ID: id, Incarnation: inc}
		if r.IntN(2) == 0 {
			m.Life = "l" + strconv.Itoa(r.IntN(2))
		}
		evs = append(evs, Joined{Member: m})
	}
	for i := range shards + 2 {
		id := "ams-" + strconv.Itoa(i)
		if (slices.Contains(a.Shards, id) && r.IntN(10) != 0) || r.IntN(4) == 0 {
			join(KindAMS, id)
		}
	}
	for w := range 3 {
		id := "worker-" + strconv.Itoa(w)
		if (slices.Contains(a.Workers, id) && !slices.Contains(a.Left, id) && r.IntN(8) != 0) || r.IntN(4) == 0 {
			join(KindWorker, id)
		}
	}
	return evs
}

// randomEvent returns an event that is often, not always, meaningful for
// c's state: it peeks at c only to aim well; the observer checks c.
// randomMember picks a member: mostly shards (of shards slots and two
// spares), some workers, a scheduler.
func randomMember(r chooser, shards int) Member {
	var m Member
	switch r.IntN(5) {
	case 0, 1, 2:
		m = Member{Kind: KindAMS, ID: "ams-" + strconv.Itoa(r.IntN(shards+2))}
	case 3:
		m = Member{Kind: KindWorker, ID: "worker-" + strconv.Itoa(r.IntN(3))}
	default:
		m = Member{Kind: KindScheduler, ID: "sched-0"}
	}
	m.Incarnation = int64(1 + r.IntN(4))
	if r.IntN(2) == 0 { // a life: the same one often, so that some come back
		m.Life = "l" + strconv.Itoa(r.IntN(2))
	}
	return m
}

func randomEvent(r chooser, c *Core, now *time.Time, shards int) Event {
	member := func() Member { return randomMember(r, shards) }
	errOf := func(pct int) error {
		if r.IntN(100) < pct {
			return errInjected
		}
		return nil
	}
	st := c.State()
	switch k := r.IntN(100); {
	case k < 22:
		m := member()
		if cur, ok := c.members[m.key()]; ok && r.IntN(4) == 0 {
			m = cur // a replayed join
		}
		return Joined{Member: m}
	case k < 40:
		m := member()
		if cur, ok := c.members[m.key()]; ok && r.IntN(5) != 0 {
			m = cur
		}
		return Left{Member: m, Graceful: r.IntN(4) == 0}
	case k < 55:
		d := time.Duration(r.IntN(90)) * time.Second
		if r.IntN(20) == 0 {
			d = -d
		}
		*now = now.Add(d)
		return Tick{Now: *now}
	case k < 58:
		return SnapshotRequested{Pin: r.IntN(3) == 0}
	case k < 60:
		return RollbackRequested{}
	case k < 75:
		id := SnapshotID(1 + r.IntN(10))
		if p := c.Pending(); p != 0 && r.IntN(5) != 0 {
			id = p
		}
		return SnapshotDone{ID: id, Err: errOf(25)}
	case k < 98:
		ev := RestoreDone{Shard: "ams-" + strconv.Itoa(r.IntN(shards+2)),
			Snapshot: SnapshotID(1 + r.IntN(5)), Version: uint64(r.IntN(6)), Err: errOf(10)}
		if st.Phase == Restoring {
			if r.IntN(7) != 0 {
				ev.Shard = c.slots[r.IntN(len(c.slots))]
			}
			if r.IntN(10) != 0 {
				ev.Snapshot = st.Snapshot
			}
			if r.IntN(10) != 0 {
				ev.Version = st.Version
			}
		}
		return ev
	default:
		switch r.IntN(4) {
		case 0:
			return Joined{Member: Member{Kind: "bogus", ID: "x"}}
		case 1:
			return Left{Member: Member{Kind: KindAMS}}
		case 2:
			return SnapshotDone{}
		}
		return nil
	}
}

// observer checks a Core from outside: it keeps its own account of the
// events fed and the actions asked, and checks every Output against it.
type observer struct {
	opts      Options
	state     State
	live      map[string]Member
	published uint64              // version of the last map
	maps      map[uint64][]string // published maps
	orders    map[uint64]Restore  // restore orders by version
	restored  map[uint64]map[string]bool
	good      map[SnapshotID]bool // committed and not refused by a restore
	pending   map[SnapshotID]bool // taken and not answered
	aborted   map[SnapshotID]bool // pending and aborted
	lastSnap  SnapshotID
	pins      map[SnapshotID]bool // pending snapshots to pin
	pinned    SnapshotID          // the pinned snapshot while it is good
	rollback  bool                // a rollback to pinned is under way
	resumed   uint64              // version of the last Resume
	model     bool                // served, adopted or with snapshots: a model to lose

	// Adoption, until the first tick decides on it.
	adopt     *Adopted        // nil once decided, or when not adopting
	dealt     map[string]bool // adopt.Workers still owed, less graceful leaves
	redeal    bool            // a dealt worker left gracefully
	adoptLost bool            // a mapped shard or a dealt worker was lost
}

func newObserver(opts Options) *observer {
	o := &observer{opts: opts, state: State{Phase: Forming, Version: opts.LastVersion},
		live: map[string]Member{}, maps: map[uint64][]string{}, orders: map[uint64]Restore{},
		restored: map[uint64]map[string]bool{}, good: map[SnapshotID]bool{}, pending: map[SnapshotID]bool{}, aborted: map[SnapshotID]bool{},
		pins: map[SnapshotID]bool{}, lastSnap: max(opts.LastSnapshot, slices.Max(append([]SnapshotID{0}, opts.Snapshots...)))}
	for _, s := range opts.Snapshots {
		o.good[s] = true
		if s == opts.Pinned {
			o.pinned = s
		}
	}
	o.trim()
	o.model = len(o.good) > 0
	if a := opts.Adopt; a != nil {
		o.model = true
		o.adopt = a
		o.state.Version = max(opts.LastVersion, a.Version)
		o.published = a.Version
		o.maps[a.Version] = slices.Clone(a.Shards)
		o.dealt = map[string]bool{}
		for _, w := range a.Workers {
			if slices.Contains(a.Left, w) {
				o.redeal = true
			} else {
				o.dealt[w] = true
			}
		}
	}
	return o
}

// adoptionLoss notes the loss of m before the adoption is decided.
func (o *observer) adoptionLoss(m Member, graceful bool) {
	a := o.adopt
	key := m.key()
	if !graceful && o.opts.RejoinWait > 0 && m.Life != "" && a.Lives[key] == m.Life &&
		(m.Kind == KindAMS && slices.Contains(a.Shards, m.ID) || m.Kind == KindWorker && o.dealt[m.ID]) {
		if cur, ok := o.live[key]; !ok || cur.Life == m.Life {
			return // the recorded life may come back: decided at the first tick
		}
	}
	switch {
	case m.Kind == KindAMS && slices.Contains(o.adopt.Shards, m.ID):
		o.adoptLost = true
	case m.Kind == KindWorker && o.dealt[m.ID]:
		if graceful {
			delete(o.dealt, m.ID)
			o.redeal = true
		} else {
			o.adoptLost = true
		}
	}
}

// adoptable says whether the adopted cluster must serve on: it was
// serving and none of its state is lost.
func (o *observer) adoptable() bool {
	a := o.adopt
	if !a.Serving || o.adoptLost {
		return false
	}
	for _, id := range a.Shards {
		key := string(KindAMS) + "/" + id
		m, ok := o.live[key]
		switch {
		case !ok:
			return false
		case a.Lives[key] != "" && m.Life != "":
			if m.Life != a.Lives[key] {
				return false
			}
		case a.MaxIncarnation != 0 && m.Incarnation > a.MaxIncarnation:
			return false
		}
	}
	for w := range o.dealt {
		key := string(KindWorker) + "/" + w
		m, ok := o.live[key]
		if !ok || (a.Lives[key] != "" && m.Life != "" && m.Life != a.Lives[key]) {
			return false
		}
	}
	return true
}

// checkAdoption checks the output of the tick that decides on adoption.
func (o *observer) checkAdoption(out Output) error {
	a := o.adopt
	var kinds []string
	for _, act := range out.Actions {
		kinds = append(kinds, fmt.Sprintf("%T", act))
	}
	if a.Stopped {
		t, ok := out.Actions[0].(Transition)
		if !ok || t.To != (State{Phase: Stopped, Version: a.Version}) || !slices.Contains(kinds, "clusterfsm.PauseWorkers") {
			return fmt.Errorf("adoption of stopped v%d: want STOPPED and a pause, got %v", a.Version, out)
		}
		return nil
	}
	if !o.adoptable() {
		t, ok := out.Actions[0].(Transition)
		if !ok || t.To.Phase != Degraded || !slices.Contains(kinds, "clusterfsm.PauseWorkers") {
			return fmt.Errorf("adoption of v%d, state lost: want DEGRADED and a pause, got %v", a.Version, out)
		}
		return nil
	}
	// Workers carry on with their shares when they are the dealt ones;
	// otherwise the data is dealt anew, without a rollback.
	want := []string{"clusterfsm.Transition", "clusterfsm.Resume"}
	dealt := slices.SortedFunc(maps.Keys(o.dealt), CompareIDs)
	if o.redeal || !slices.Equal(o.liveIDs(KindWorker), dealt) {
		want = []string{"clusterfsm.Transition", "clusterfsm.PauseWorkers", "clusterfsm.AssignReaders", "clusterfsm.Resume"}
	}
	if !slices.Equal(kinds, want) || out.Actions[0].(Transition).To != (State{Phase: Serving, Version: a.Version}) {
		return fmt.Errorf("adoption of v%d, dealt %v: want %v to SERVING(v%d), got %v", a.Version, o.dealt, want, a.Version, out)
	}
	return nil
}

// trim keeps the newest Keep good snapshots and the pinned one, on top of
// them when older: older ones are pruned.
func (o *observer) trim() {
	keep := o.opts.Keep
	if keep == 0 {
		keep = DefaultKeep
	}
	ids := slices.Sorted(maps.Keys(o.good))
	for i, s := range ids {
		if i < len(ids)-keep && s != o.pinned {
			delete(o.good, s)
		}
	}
}

// newestGood is the snapshot a restore must pick: the newest committed one
// no restore refused, among the newest Keep committed, or the pinned one
// during a rollback.
func (o *observer) newestGood() SnapshotID {
	if o.rollback && o.good[o.pinned] {
		return o.pinned
	}
	var best SnapshotID
	for s := range o.good {
		best = max(best, s)
	}
	return best
}

func (o *observer) liveIDs(kind Kind) []string {
	var ids []string
	for _, m := range o.live {
		if m.Kind == kind {
			ids = append(ids, m.ID)
		}
	}
	slices.SortFunc(ids, CompareIDs)
	return ids
}

func (o *observer) allLive(shards []string) bool {
	for _, id := range shards {
		if _, ok := o.live[string(KindAMS)+"/"+id]; !ok {
			return false
		}
	}
	return true
}

// check feeds ev and its output to the observer and returns the first
// broken invariant.
func (o *observer) check(ev Event, out Output, c *Core) error {
	prev := o.state
	if err := o.noteEvent(ev, out); err != nil {
		return err
	}
	if err := o.checkOutputShape(ev, out, prev); err != nil {
		return err
	}
	step := actionCheck{cur: prev, ev: ev}
	for _, a := range out.Actions {
		if err := o.checkAction(a, &step); err != nil {
			return err
		}
	}
	cur := step.cur
	if step.needPause {
		return fmt.Errorf("left SERVING without pausing workers")
	}
	if cur.Phase != Serving && len(o.pending) > len(o.aborted) {
		return fmt.Errorf("%v with snapshot %v pending, not aborted", cur, o.pending)
	}
	if err := o.checkLiveness(cur, c); err != nil {
		return err
	}
	st := c.State()
	if err := o.checkFinalState(st, prev, cur, out); err != nil {
		return err
	}
	o.state = st
	return nil
}

// noteEvent updates the observer's view with ev, as the core's answer out
// accepted or rejected it, and checks that what was accepted could be.
func (o *observer) noteEvent(ev Event, out Output) error {
	switch ev := ev.(type) {
	case Joined:
		if out.Rejected == nil {
			sameLife := o.opts.RejoinWait > 0 && ev.Member.Life != ""
			old, ok := o.live[ev.Member.key()]
			o.live[ev.Member.key()] = ev.Member // live first, as in the core: the old life is replaced
			if ok && o.adopt != nil && !(sameLife && old.Life == ev.Member.Life) {
				o.adoptionLoss(old, false) // a new life: the old one died (a new incarnation of one life lost nothing)
			}
		}
	case Left:
		if cur, ok := o.live[ev.Member.key()]; ok && cur == ev.Member {
			delete(o.live, ev.Member.key())
			if o.adopt != nil {
				o.adoptionLoss(ev.Member, ev.Graceful)
			}
		} else if out.Rejected == nil {
			return fmt.Errorf("leave of %v, not live, accepted", ev.Member)
		}
	case SnapshotDone:
		if out.Rejected == nil {
			return o.noteSnapshotDone(ev)
		}
	case RollbackRequested:
		return o.noteRollback(out)
	case RestoreDone:
		if out.Rejected == nil {
			return o.noteRestoreDone(ev)
		}
	}
	return nil
}

// noteSnapshotDone notes an accepted SnapshotDone: it must answer a pending
// snapshot, which becomes good when it succeeded.
func (o *observer) noteSnapshotDone(ev SnapshotDone) error {
	if !o.pending[ev.ID] {
		return fmt.Errorf("%v accepted, not pending", ev)
	}
	delete(o.pending, ev.ID)
	delete(o.aborted, ev.ID)
	if ev.Err == nil {
		o.good[ev.ID] = true
		if o.pins[ev.ID] {
			o.pinned = ev.ID
		}
		o.trim()
	}
	delete(o.pins, ev.ID)
	return nil
}

// noteRollback checks that a rollback is refused only when the cluster
// does not serve or no pinned snapshot is good (while a cut runs it is
// queued); StartRollback checks when one may start (checkStartRollback).
func (o *observer) noteRollback(out Output) error {
	can := o.state.Phase == Serving && len(o.pending) == 0 && o.good[o.pinned]
	if out.Rejected != nil && can {
		return fmt.Errorf("rollback refused: %v", out.Rejected)
	}
	return nil
}

// checkStartRollback checks that a rollback starts only while SERVING,
// no snapshot runs and the pinned snapshot is good, and to it.
func (o *observer) checkStartRollback(a StartRollback, cur State) error {
	if cur.Phase != Serving || len(o.pending) > 0 || !o.good[o.pinned] || a.To != o.pinned {
		return fmt.Errorf("%v in %v, pending %v, pinned %v, good %v", a, cur, o.pending, o.pinned, o.good)
	}
	o.rollback = true
	return nil
}

// checkQueued checks that a request is queued only while SERVING with a
// cut in progress (a snapshot, or an export: a periodic one), and only
// as an answer to a request or to a CutSettled.
func (o *observer) checkQueued(ev Event, a Queued, cur State) error {
	switch ev.(type) {
	case SnapshotRequested, RollbackRequested, ExportRequested, CutSettled:
	default:
		return fmt.Errorf("%v answers %v", a, ev)
	}
	if cur.Phase != Serving || len(o.pending) == 0 && o.opts.ExportEvery == 0 {
		return fmt.Errorf("%v in %v, pending %v", a, cur, o.pending)
	}
	return nil
}

// checkRefused checks that only a CutSettled refuses a queued request,
// for a reason a request may be rejected with.
func (o *observer) checkRefused(ev Event, a Refused) error {
	if _, ok := ev.(CutSettled); !ok {
		return fmt.Errorf("%v answers %v", a, ev)
	}
	if !errors.Is(a.Err, ErrNotServing) && !errors.Is(a.Err, ErrNoPinned) && !errors.Is(a.Err, ErrFailed) {
		return fmt.Errorf("%v: not a refusal of a request", a)
	}
	return nil
}

// noteRestoreDone notes an accepted RestoreDone: it must answer a restore
// order of the map last published, once per shard; a failure marks the
// snapshot bad.
func (o *observer) noteRestoreDone(ev RestoreDone) error {
	ord, ok := o.orders[ev.Version]
	if !ok || ord.Snapshot != ev.Snapshot || !slices.Contains(ord.Shards, ev.Shard) || o.published != ev.Version {
		return fmt.Errorf("%v accepted, not ordered", ev)
	}
	if ev.Err != nil {
		delete(o.good, ev.Snapshot)
		if ev.Snapshot == o.pinned {
			o.pinned, o.rollback = 0, false
		}
		return nil
	}
	if o.restored[ev.Version] == nil {
		o.restored[ev.Version] = map[string]bool{}
	}
	if o.restored[ev.Version][ev.Shard] {
		return fmt.Errorf("%v accepted twice", ev)
	}
	o.restored[ev.Version][ev.Shard] = true
	return nil
}

// checkOutputShape checks when an output may carry actions at all: not
// when rejected, not after FAILED, not before the first tick when
// adopting; that tick's output must decide on the adoption.
func (o *observer) checkOutputShape(ev Event, out Output, prev State) error {
	if out.Rejected != nil && len(out.Actions) > 0 {
		return fmt.Errorf("rejected (%v) with actions", out.Rejected)
	}
	if prev.Phase == Failed && slices.ContainsFunc(out.Actions, func(a Action) bool { _, ok := a.(Refused); return !ok }) {
		return fmt.Errorf("actions after FAILED, but the refusals of queued requests")
	}
	if o.adopt == nil {
		return nil
	}
	// Nothing happens before the first tick; it decides.
	if _, ok := ev.(Tick); !ok {
		if len(out.Actions) > 0 {
			return fmt.Errorf("actions before the first tick when adopting")
		}
		return nil
	}
	if err := o.checkAdoption(out); err != nil {
		return err
	}
	o.adopt = nil
	return nil
}

// actionCheck is what checking one output's actions in order carries from
// one action to the next.
type actionCheck struct {
	ev        Event // the event answered
	cur       State // the state the transitions so far lead to
	needPause bool  // left SERVING, workers not yet paused
	paused    bool  // workers were paused in this step (a rollback pauses, then leaves SERVING)
}

// checkAction checks one action against the observer's view and the
// state the output's earlier transitions lead to, and notes its effects.
func (o *observer) checkAction(a Action, step *actionCheck) error {
	cur := step.cur
	switch a := a.(type) {
	case Transition:
		return o.checkTransition(a, step)
	case PublishShardMap:
		return o.checkPublish(a, cur)
	case Restore:
		return o.checkRestore(a, cur)
	case Resume:
		return o.checkResume(a, cur)
	case TakeSnapshot:
		return o.checkTakeSnapshot(a, cur)
	case AbortSnapshot:
		if !o.pending[a.ID] || cur.Phase == Serving {
			return fmt.Errorf("%v: pending %v, state %v", a, o.pending, cur)
		}
		o.aborted[a.ID] = true
	case PauseWorkers:
		if a.Version != cur.Version {
			return fmt.Errorf("%v: state is %v", a, cur)
		}
		step.needPause, step.paused = false, true
		// While SERVING, a pause is a new deal of the data: never
		// during a snapshot, which pauses and resumes workers itself.
		if cur.Phase == Serving && len(o.pending) > len(o.aborted) {
			return fmt.Errorf("%v: during snapshot %v", a, o.pending)
		}
	case AssignReaders:
		if cur.Phase != Serving || a.Version != cur.Version {
			return fmt.Errorf("%v: state is %v", a, cur)
		}
		if w := o.liveIDs(KindWorker); !slices.Equal(a.Workers, w) && !(len(w) == 0 && len(a.Workers) == 0) {
			return fmt.Errorf("%v: live workers are %v", a, w)
		}
	case StartRollback:
		return o.checkStartRollback(a, cur)
	case Queued:
		return o.checkQueued(step.ev, a, cur)
	case Refused:
		return o.checkRefused(step.ev, a)
	case GiveUp:
		if errors.Is(a.Err, ErrNoSnapshot) != o.model {
			return fmt.Errorf("%v: the cluster has a model: %v", a, o.model)
		}
		if cur.Phase != Failed {
			return fmt.Errorf("%v: state is %v", a, cur)
		}
		if len(o.good) > 0 || len(o.pending) > 0 {
			return fmt.Errorf("%v: good %v, pending %v", a, o.good, o.pending)
		}
	default:
		return fmt.Errorf("unknown action %T", a)
	}
	return nil
}

// checkTransition checks that a starts where the earlier transitions
// ended, changes something and never lowers the version.
func (o *observer) checkTransition(a Transition, step *actionCheck) error {
	cur := step.cur
	if a.From != cur {
		return fmt.Errorf("%v: from %v, was %v", a, a.From, cur)
	}
	// Workers may be training when the adoption of a cluster
	// finds its state lost, too.
	if a.From.Phase == Serving && !step.paused || a.From.Phase == Forming && a.To.Phase == Degraded {
		step.needPause = true
	}
	if a.To.Version < cur.Version {
		return fmt.Errorf("%v: version goes down", a)
	}
	if a.To == cur {
		return fmt.Errorf("%v: no change", a)
	}
	if a.To.Phase == Serving {
		o.model = true
	}
	// A stopped cluster with no snapshot left (none pending either)
	// forms anew: its model went with the shards that left on purpose.
	if a.From.Phase == Stopped && a.To.Phase == Restoring && a.To.Snapshot == 0 {
		if len(o.good) > 0 || len(o.pending) > 0 {
			return fmt.Errorf("%v: begins empty with good %v, pending %v", a, o.good, o.pending)
		}
		o.model = false
	}
	// Only a shard of the map leaving on purpose, no worker live,
	// stops a cluster (or the adoption of a stopped one).
	if a.To.Phase == Stopped && a.From.Phase != Forming && len(o.liveIDs(KindWorker)) > 0 {
		return fmt.Errorf("%v: workers %v are live", a, o.liveIDs(KindWorker))
	}
	step.cur = a.To
	return nil
}

// checkPublish checks that a map is published once per version, of N
// distinct live shards, at the state's version.
func (o *observer) checkPublish(a PublishShardMap, cur State) error {
	if a.Version <= o.published {
		return fmt.Errorf("%v: not above v%d", a, o.published)
	}
	if len(a.Shards) != o.opts.Shards || len(slices.Compact(slices.Sorted(slices.Values(a.Shards)))) != len(a.Shards) {
		return fmt.Errorf("%v: not %d distinct shards", a, o.opts.Shards)
	}
	if !o.allLive(a.Shards) {
		return fmt.Errorf("%v: a shard is not live", a)
	}
	if a.Version != cur.Version {
		return fmt.Errorf("%v: state is %v", a, cur)
	}
	o.published = a.Version
	o.maps[a.Version] = slices.Clone(a.Shards)
	return nil
}

// checkRestore checks that a restore order names the map just published
// and the newest good snapshot, while RESTORING it.
func (o *observer) checkRestore(a Restore, cur State) error {
	if a.Version != o.published || !slices.Equal(a.Shards, o.maps[a.Version]) {
		return fmt.Errorf("%v: not the map just published", a)
	}
	if a.Snapshot != o.newestGood() {
		return fmt.Errorf("%v: newest good snapshot is %v", a, o.newestGood())
	}
	// Beginning empty throws the model away: only a cluster that never
	// served may.
	if a.Snapshot == 0 && o.model {
		return fmt.Errorf("%v: begins empty a cluster with a model", a)
	}
	if cur.Phase != Restoring || cur.Snapshot != a.Snapshot || cur.Version != a.Version {
		return fmt.Errorf("%v: state is %v", a, cur)
	}
	o.orders[a.Version] = a
	return nil
}

// checkResume checks that workers resume only while SERVING the map last
// published, every shard of it live and restored when a restore was ordered.
func (o *observer) checkResume(a Resume, cur State) error {
	if cur.Phase != Serving || a.Version != cur.Version {
		return fmt.Errorf("%v: state is %v", a, cur)
	}
	if a.Version < o.resumed || a.Version != o.published {
		return fmt.Errorf("%v: last resumed v%d, last published v%d", a, o.resumed, o.published)
	}
	if !o.allLive(o.maps[a.Version]) {
		return fmt.Errorf("%v: a shard of %v is gone", a, o.maps[a.Version])
	}
	if ord, ok := o.orders[a.Version]; ok {
		for _, s := range ord.Shards {
			if !o.restored[a.Version][s] {
				return fmt.Errorf("%v: %s has not restored %v", a, s, ord.Snapshot)
			}
		}
		if o.rollback && a.Version > o.resumed { // the snapshots after the pinned one are forgotten
			for s := range o.good {
				if s > ord.Snapshot {
					delete(o.good, s)
				}
			}
		}
		o.rollback = false
	}
	o.resumed = a.Version
	return nil
}

// checkTakeSnapshot checks that snapshots start only while SERVING, one at
// a time, with ids that go up.
func (o *observer) checkTakeSnapshot(a TakeSnapshot, cur State) error {
	if cur.Phase != Serving || a.Version != cur.Version {
		return fmt.Errorf("%v: state is %v", a, cur)
	}
	if len(o.pending) > 0 {
		return fmt.Errorf("%v: %v still pending", a, o.pending)
	}
	if a.ID <= o.lastSnap {
		return fmt.Errorf("%v: not above %v", a, o.lastSnap)
	}
	o.lastSnap = a.ID
	o.pending[a.ID] = true
	if a.Pin {
		o.pins[a.ID] = true
	}
	return nil
}

// checkLiveness checks that the core, ending a step in cur, waits only
// when there is something to wait for.
func (o *observer) checkLiveness(cur State, c *Core) error {
	shards, workers := len(o.liveIDs(KindAMS)), len(o.liveIDs(KindWorker))
	switch cur.Phase {
	case Forming:
		if o.opts.Adopt != nil && o.adopt == nil {
			return fmt.Errorf("still FORMING after the first tick when adopting")
		}
		if o.opts.Adopt == nil && shards >= o.opts.Shards && workers >= o.opts.Workers {
			return fmt.Errorf("still FORMING with %d shards and %d workers live", shards, workers)
		}
	case Degraded:
		if len(c.away) > 0 { // waiting for lives to come back, for a bounded time
			if c.now.Sub(c.awaySince) >= o.opts.RejoinWait {
				return fmt.Errorf("still waiting for %v, %v after %v", c.away, c.now.Sub(c.awaySince), c.awaySince)
			}
			return nil
		}
		if shards >= o.opts.Shards && (len(o.good) > 0 || len(o.pending) == 0) {
			return fmt.Errorf("still DEGRADED with %d shards live, good %v, pending %v", shards, o.good, o.pending)
		}
	case Stopped:
		if shards >= o.opts.Shards && (len(o.good) > 0 || len(o.pending) == 0) {
			return fmt.Errorf("still STOPPED with %d shards live, good %v, pending %v", shards, o.good, o.pending)
		}
	}
	return nil
}

// checkFinalState checks the core's state st after the step: where the
// transitions led (cur), unchanged from prev when rejected, and, while
// SERVING or RESTORING, on the last map published with all its shards live.
func (o *observer) checkFinalState(st, prev, cur State, out Output) error {
	if st != cur {
		return fmt.Errorf("state %v, transitions end at %v", st, cur)
	}
	if out.Rejected != nil && st != prev {
		return fmt.Errorf("rejected (%v) but state changed", out.Rejected)
	}
	switch st.Phase {
	case Serving, Restoring:
		if st.Version != o.published || !o.allLive(o.maps[o.published]) {
			return fmt.Errorf("%v with map v%d %v not all live", st, o.published, o.maps[o.published])
		}
	}
	if st.Phase == Serving && o.resumed != st.Version {
		return fmt.Errorf("%v but last resumed v%d", st, o.resumed)
	}
	return nil
}

// runRandom feeds n events chosen by r to a Core with random options and
// checks every step. It counts the phases met and the actions asked in
// stats, when not nil.
func runRandom(t *testing.T, r chooser, n int, stats map[string]int) {
	opts := randomOptions(r)
	c, err := New(opts)
	if err != nil {
		t.Fatalf("options %+v: %v", opts, err)
	}
	o := newObserver(opts)
	now := scriptEpoch
	// When adopting, the driver's initial sync comes first, then (often
	// at once) the tick that ends it.
	var sync []Event
	if opts.Adopt != nil {
		sync = initialSync(r, opts.Adopt, opts.Shards)
		if r.IntN(4) != 0 {
			sync = append(sync, Tick{Now: now})
		}
	}
	var trace []string
	settle := false // the driver settles the cut a SnapshotDone ended
	for i := range len(sync) + n {
		var ev Event
		switch {
		case i < len(sync):
			ev = sync[i]
		case settle:
			ev = CutSettled{}
		default:
			ev = randomEvent(r, c, &now, opts.Shards)
		}
		out := c.Step(ev)
		_, done := ev.(SnapshotDone)
		settle = done && (out.Rejected == nil || errors.Is(out.Rejected, ErrFailed)) && r.IntN(8) != 0
		trace = append(trace, fmt.Sprintf("%v\n%s", ev, out))
		if err := o.check(ev, out, c); err != nil {
			if len(trace) > 400 {
				trace = trace[len(trace)-400:]
			}
			adopt := "none"
			if opts.Adopt != nil {
				adopt = fmt.Sprintf("%+v", *opts.Adopt)
			}
			t.Fatalf("options %+v\nadopt %s\n%s\nbroken: %v", opts, adopt, trace, err)
		}
		if stats != nil {
			stats[c.State().Phase.String()]++
			for _, a := range out.Actions {
				stats[fmt.Sprintf("%T", a)]++
				t, ok := a.(Transition)
				switch {
				case !ok:
				case t.From.Phase == Restoring && t.To.Phase == Restoring:
					stats["fallback"]++
				case t.From.Phase == Forming && opts.Adopt != nil:
					stats["adopt->"+t.To.Phase.String()]++
				}
			}
		}
	}
}

// TestRandomSequences checks the invariants over random event sequences:
// versions never go down, maps are published once per version with N live
// shards, workers resume only when every shard of the map is live and has
// restored, snapshots only start while SERVING and one at a time, restores
// pick the newest good snapshot, the core gives up only with none left,
// requests are queued only during a cut and refused only for a reason a
// request is rejected with.
func TestRandomSequences(t *testing.T) {
	stats := map[string]int{}
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		runRandom(t, r, 200, stats)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("%v", stats)
	// The generator must reach every phase and every action, often.
	for _, k := range []string{"FORMING", "SERVING", "DEGRADED", "RESTORING", "FAILED", "STOPPED",
		"clusterfsm.Resume", "clusterfsm.Restore", "clusterfsm.TakeSnapshot", "clusterfsm.AbortSnapshot",
		"clusterfsm.AssignReaders", "clusterfsm.GiveUp", "clusterfsm.Queued", "clusterfsm.Refused",
		"fallback", "adopt->SERVING", "adopt->DEGRADED"} {
		if stats[k] < 50 {
			t.Errorf("the generator reached %s only %d times", k, stats[k])
		}
	}
}

// FuzzCore drives the core with events chosen by the fuzzer's bytes.
func FuzzCore(f *testing.F) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 7))
		b := make([]byte, 400)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		runRandom(t, &byteChooser{b: b}, len(b)/2, nil)
	})
}
