package clusterfsm

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"
)

func ams(id string) Member    { return Member{Kind: KindAMS, ID: id, Incarnation: 1} }
func worker(id string) Member { return Member{Kind: KindWorker, ID: id, Incarnation: 1} }

// serving returns a Core serving v1 on ams-0 with worker-0, with snap-1
// committed.
func serving(t *testing.T) *Core {
	t.Helper()
	c, err := New(Options{Shards: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Step(Joined{Member: ams("ams-0")})
	c.Step(Joined{Member: worker("worker-0")})
	if out := c.Step(RestoreDone{Shard: "ams-0", Version: 1}); out.Rejected != nil {
		t.Fatal(out.Rejected)
	}
	if out := c.Step(SnapshotDone{ID: 1}); out.Rejected != nil {
		t.Fatal(out.Rejected)
	}
	if got := c.State(); got != (State{Phase: Serving, Version: 1}) {
		t.Fatalf("state %v", got)
	}
	return c
}

func TestRejected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*Core)
		ev    Event
		want  error
	}{
		{"nil event", nil, nil, ErrBadEvent},
		{"unknown kind", nil, Joined{Member: Member{Kind: "pod", ID: "x"}}, ErrBadEvent},
		{"empty id", nil, Joined{Member: Member{Kind: KindWorker}}, ErrBadEvent},
		{"leave with empty id", nil, Left{Member: Member{Kind: KindAMS}}, ErrBadEvent},
		{"zero snapshot id", nil, SnapshotDone{}, ErrBadEvent},
		{"restore without shard", nil, RestoreDone{Snapshot: 1, Version: 1}, ErrBadEvent},
		{"begun while serving", nil, RestoreDone{Shard: "ams-0", Version: 1}, ErrStale},
		{"replayed join", nil, Joined{Member: ams("ams-0")}, ErrStale},
		{"unknown member", nil, LeaseExpired(ams("ams-9")), ErrStale},
		{"old incarnation", nil, LeaseExpired(Member{Kind: KindAMS, ID: "ams-0", Incarnation: 7}), ErrStale},
		{"snapshot not in progress", nil, SnapshotDone{ID: 1}, ErrStale},
		{"restore while serving", nil, RestoreDone{Shard: "ams-0", Snapshot: 1, Version: 1}, ErrStale},
		{"tick back", func(c *Core) { c.Step(Tick{Now: scriptEpoch}) }, Tick{Now: scriptEpoch.Add(-time.Second)}, ErrStale},
		{"snapshot while degraded", func(c *Core) { c.Step(LeaseExpired(ams("ams-0"))) }, SnapshotRequested{}, ErrNotServing},
		{"after failing", func(c *Core) {
			c.Step(SnapshotRequested{})
			c.Step(LeaseExpired(ams("ams-0")))
			c.Step(Joined{Member: ams("ams-1")})
			c.Step(RestoreDone{Shard: "ams-1", Snapshot: 1, Version: 2, Err: errInjected})
			c.Step(SnapshotDone{ID: 2, Err: errInjected})
		}, Joined{Member: ams("ams-2")}, ErrFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := serving(t)
			if tc.setup != nil {
				tc.setup(c)
			}
			before := c.State()
			out := c.Step(tc.ev)
			if !errors.Is(out.Rejected, tc.want) {
				t.Fatalf("rejected %v, want %v", out.Rejected, tc.want)
			}
			if len(out.Actions) != 0 || c.State() != before {
				t.Fatalf("rejected event changed something: %v, state %v -> %v", out, before, c.State())
			}
		})
	}
}

func TestTickAfterFailing(t *testing.T) {
	c, err := New(Options{Shards: 1, SkipInitialSnapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Step(Joined{Member: ams("a")})
	c.Step(RestoreDone{Shard: "a", Version: 1}) // begun: serving
	out := c.Step(LeaseExpired(ams("a")))
	if c.State().Phase != Failed || !slices.ContainsFunc(out.Actions, func(a Action) bool {
		g, ok := a.(GiveUp)
		return ok && errors.Is(g.Err, ErrNoSnapshot)
	}) {
		t.Fatalf("want FAILED and GiveUp(ErrNoSnapshot), got %v\n%v", c.State(), out)
	}
	now := scriptEpoch.Add(time.Hour)
	if out := c.Step(Tick{Now: now}); out.Rejected != nil || len(out.Actions) != 0 || !c.Now().Equal(now) {
		t.Fatalf("tick after failing: %v, now %v", out, c.Now())
	}
}

func TestStateString(t *testing.T) {
	for _, tc := range []struct {
		s    State
		want string
	}{
		{State{Phase: Forming}, "FORMING"},
		{State{Phase: Serving, Version: 3}, "SERVING(v3)"},
		{State{Phase: Degraded, Version: 3}, "DEGRADED(v3)"},
		{State{Phase: Restoring, Version: 4, Snapshot: 7}, "RESTORING(snap-7 v4)"},
		{State{Phase: Failed, Version: 4}, "FAILED"},
		{State{Phase: Stopped, Version: 4}, "STOPPED(v4)"},
		{State{Phase: 42}, "Phase(42)"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestOptions(t *testing.T) {
	snaps := []SnapshotID{5, 2, 9, 5, 7}
	c, err := New(Options{Shards: 2, Snapshots: snaps})
	if err != nil {
		t.Fatal(err)
	}
	snaps[0] = 100 // New must not keep the caller's slice
	if got, want := c.Snapshots(), []SnapshotID{5, 7, 9}; !slices.Equal(got, want) {
		t.Errorf("snapshots %v, want the newest DefaultKeep %v", got, want)
	}
	c.Snapshots()[0] = 0
	if c.Snapshots()[0] != 5 {
		t.Error("Snapshots returns the core's slice")
	}
	c.Step(Joined{Member: ams("a")})
	out := c.Step(Joined{Member: ams("b")})
	if want := "restore snap-9 v1 [a b]"; !slices.ContainsFunc(out.Actions, func(a Action) bool { return a.String() == want }) {
		t.Errorf("want %q in\n%v", want, out)
	}
	// New snapshot ids continue above LastSnapshot, defaulting to the
	// highest of Snapshots.
	for _, s := range []string{"a", "b"} {
		c.Step(RestoreDone{Shard: s, Snapshot: 9, Version: 1})
	}
	if out := c.Step(SnapshotRequested{}); len(out.Actions) != 1 || out.Actions[0] != (TakeSnapshot{ID: 10, Version: 1}) {
		t.Errorf("snapshot request: %v", out)
	}

	for _, tc := range []struct {
		opts Options
		ok   bool
	}{
		{Options{Shards: 1}, true},
		{Options{Shards: 65535}, true},
		{Options{Shards: 65536}, false},
		{Options{Shards: 1, Snapshots: []SnapshotID{3}, LastSnapshot: 2}, true},
		{Options{Shards: 1, LastVersion: 1 << 63}, false},
		{Options{Shards: 1, LastSnapshot: 1 << 63}, false},
		{Options{Shards: 1, Keep: -2}, false},
		{Options{Shards: 2, Adopt: &Adopted{Version: 3, Shards: []string{"b", "a"}}}, true},
		{Options{Shards: 2, LastVersion: 3, Adopt: &Adopted{Version: 3, Shards: []string{"b", "a"}}}, true},
		{Options{Shards: 2, LastVersion: 4, Adopt: &Adopted{Version: 3, Shards: []string{"b", "a"}}}, false},
		{Options{Shards: 2, Adopt: &Adopted{Shards: []string{"b", "a"}}}, false},
		{Options{Shards: 2, Adopt: &Adopted{Version: 1 << 63, Shards: []string{"b", "a"}}}, false},
		{Options{Shards: 2, Adopt: &Adopted{Version: 3, Shards: []string{"a"}}}, false},
		{Options{Shards: 2, Adopt: &Adopted{Version: 3, Shards: []string{"a", "a"}}}, false},
		{Options{Shards: 2, Adopt: &Adopted{Version: 3, Shards: []string{"a", ""}}}, false},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, Workers: []string{"w", "w"}}}, false},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, Workers: []string{""}}}, false},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, Serving: true, Stopped: true}}, false},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, Left: []string{"x", ""}}}, false},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, Left: []string{"x", "x"}}}, true},
		{Options{Shards: 1, Adopt: &Adopted{Version: 3, Shards: []string{"a"}, MaxIncarnation: -1}}, false},
	} {
		_, err := New(tc.opts)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadOptions)) {
			t.Errorf("New(%+v): %v", tc.opts, err)
		}
	}
}

// TestAdoptOptions checks that New keeps none of Options.Adopt's slices
// and raises the version to Adopt.Version.
func TestAdoptOptions(t *testing.T) {
	a := &Adopted{Version: 5, Shards: []string{"b", "a"}, Serving: true,
		Workers: []string{"w1", "w0"}, Left: []string{"w1"}}
	c, err := New(Options{Shards: 2, LastVersion: 2, Adopt: a})
	if err != nil {
		t.Fatal(err)
	}
	a.Shards[0], a.Workers[1], a.Left[0], a.Serving = "x", "x", "x", false
	if got := c.State(); got != (State{Phase: Forming, Version: 5}) {
		t.Errorf("state %v, want FORMING at v5", got)
	}
	for _, m := range []Member{ams("a"), ams("b"), worker("w0")} {
		if out := c.Step(Joined{Member: m}); out.Rejected != nil || len(out.Actions) != 0 {
			t.Fatalf("join %v before the first tick: %v", m, out)
		}
	}
	out := c.Step(Tick{Now: scriptEpoch})
	want := []Action{
		Transition{From: State{Phase: Forming, Version: 5}, To: State{Phase: Serving, Version: 5}, Cause: "adopted v5"},
		PauseWorkers{Version: 5},
		AssignReaders{Version: 5, Workers: []string{"w0"}},
		Resume{Version: 5},
	}
	if !reflect.DeepEqual(out.Actions, want) {
		t.Errorf("first tick:\n%v\nwant:\n%v", out, Output{Actions: want})
	}
	if got := c.Slots(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("slots %v, want [b a]", got)
	}
}

func TestCompareIDs(t *testing.T) {
	want := []string{"a", "a01", "a1", "a2", "a10", "ams-2", "ams-10", "ams-10b", "b"}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, CompareIDs)
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
