package scheduler

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/internal/clusterfsm"

	"github.com/xdlgo/xps/internal/cluster"
)

func shard(id string) cluster.Member {
	return cluster.Member{Kind: cluster.KindAMS, ID: id, Addr: id + ":7000", PID: 1}
}

func worker(id string) cluster.Member {
	return cluster.Member{Kind: cluster.KindWorker, ID: id, PID: 2}
}

func join(m cluster.Member) Event  { return MemberJoined{Member: m} }
func leave(m cluster.Member) Event { return MemberLeft{Member: m, Graceful: true} }
func expire(m cluster.Member) Event {
	return LeaseExpired(m)
}

// step is one line of a scenario: an event and the rendered Output it must
// produce ("" for none).
type step struct {
	ev   Event
	want string
}

func TestCoreScenarios(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a2 := shard("a")
	a2.PID = 99
	for _, sc := range []struct {
		name      string
		cfg       Config
		steps     []step
		wantState State
	}{{
		name: "form with two shards, in ID order",
		cfg:  Config{Shards: 2, Partitions: 8},
		steps: []step{
			{join(shard("b")), "report joined ams/b"},
			{join(worker("w1")), "report joined worker/w1"},
			{join(shard("a")), `
report joined ams/a
publish v1 partitions=8 shards=[a@a:7000 b@b:7000]
state FORMING -> SERVING v1 (ams/a)`},
		},
		wantState: Serving,
	}, {
		name: "shard lost while forming is replaced",
		cfg:  Config{Shards: 2, Partitions: 8},
		steps: []step{
			{join(shard("a")), "report joined ams/a"},
			{expire(shard("a")), "report lease-expired ams/a"},
			{join(shard("b")), "report joined ams/b"},
			{leave(shard("b")), "report left ams/b"},
			{join(shard("c")), "report joined ams/c"},
			{join(shard("d")), `
report joined ams/d
publish v1 partitions=8 shards=[c@c:7000 d@d:7000]
state FORMING -> SERVING v1 (ams/d)`},
		},
		wantState: Serving,
	}, {
		name: "lease expiry of a mapped shard degrades",
		cfg:  Config{Shards: 2, Partitions: 4},
		steps: []step{
			{join(shard("a")), "report joined ams/a"},
			{join(shard("b")), `
report joined ams/b
publish v1 partitions=4 shards=[a@a:7000 b@b:7000]
state FORMING -> SERVING v1 (ams/b)`},
			{expire(cluster.Member{Kind: cluster.KindAMS, ID: "b"}), `
report lease-expired ams/b
state SERVING -> DEGRADED v1 (ams/b)`},
			{join(shard("b")), "report joined ams/b"},
			{expire(shard("a")), "report lease-expired ams/a"},
		},
		wantState: Degraded,
	}, {
		name: "graceful leave of a mapped shard degrades too, reported as a leave",
		cfg:  Config{Shards: 1, Partitions: 4},
		steps: []step{
			{join(shard("a")), `
report joined ams/a
publish v1 partitions=4 shards=[a@a:7000]
state FORMING -> SERVING v1 (ams/a)`},
			{leave(shard("a")), `
report left ams/a
state SERVING -> DEGRADED v1 (ams/a)`},
		},
		wantState: Degraded,
	}, {
		name: "workers and schedulers never change the state",
		cfg:  Config{Shards: 1, Partitions: 4},
		steps: []step{
			{join(shard("a")), `
report joined ams/a
publish v1 partitions=4 shards=[a@a:7000]
state FORMING -> SERVING v1 (ams/a)`},
			{join(worker("w1")), "report joined worker/w1"},
			{join(worker("w2")), "report joined worker/w2"},
			{leave(worker("w1")), "report left worker/w1"},
			{expire(worker("w2")), "report lease-expired worker/w2"},
			{join(cluster.Member{Kind: cluster.KindScheduler, ID: "s"}), "report joined scheduler/s"},
			{expire(cluster.Member{Kind: cluster.KindScheduler, ID: "s"}), "report lease-expired scheduler/s"},
		},
		wantState: Serving,
	}, {
		name: "spare shard is reported only",
		cfg:  Config{Shards: 1, Partitions: 4},
		steps: []step{
			{join(shard("a")), `
report joined ams/a
publish v1 partitions=4 shards=[a@a:7000]
state FORMING -> SERVING v1 (ams/a)`},
			{join(shard("b")), "report joined ams/b"},
			{expire(shard("b")), "report lease-expired ams/b"},
		},
		wantState: Serving,
	}, {
		name: "replayed join and ticks produce nothing",
		cfg:  Config{Shards: 2, Partitions: 4},
		steps: []step{
			{join(shard("a")), "report joined ams/a"},
			{join(shard("a")), ""},
			{Tick{Now: t0}, ""},
			{Tick{Now: t0.Add(time.Second)}, ""},
		},
		wantState: Forming,
	}, {
		name: "a new incarnation of a mapped shard means the old one was lost",
		cfg:  Config{Shards: 2, Partitions: 4},
		steps: []step{
			{join(shard("a")), "report joined ams/a"},
			{join(shard("b")), `
report joined ams/b
publish v1 partitions=4 shards=[a@a:7000 b@b:7000]
state FORMING -> SERVING v1 (ams/b)`},
			{join(a2), `
report lease-expired ams/a
report joined ams/a
state SERVING -> DEGRADED v1 (ams/a)`},
		},
		wantState: Degraded,
	}, {
		name: "shards ordered with numeric runs",
		cfg:  Config{Shards: 3, Partitions: 6},
		steps: []step{
			{join(shard("ams-10")), "report joined ams/ams-10"},
			{join(shard("ams-2")), "report joined ams/ams-2"},
			{join(shard("ams-1")), `
report joined ams/ams-1
publish v1 partitions=6 shards=[ams-1@ams-1:7000 ams-2@ams-2:7000 ams-10@ams-10:7000]
state FORMING -> SERVING v1 (ams/ams-1)`},
		},
		wantState: Serving,
	}, {
		name: "leave of an unknown member is still reported",
		cfg:  Config{Shards: 1, Partitions: 4},
		steps: []step{
			{expire(worker("ghost")), "report lease-expired worker/ghost"},
		},
		wantState: Forming,
	}, {
		name: "configured first version",
		cfg:  Config{Shards: 1, Partitions: 2, Version: 7},
		steps: []step{
			{join(shard("a")), `
report joined ams/a
publish v7 partitions=2 shards=[a@a:7000]
state FORMING -> SERVING v7 (ams/a)`},
		},
		wantState: Serving,
	}} {
		t.Run(sc.name, func(t *testing.T) {
			c, err := NewCore(sc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range sc.steps {
				out := c.Step(st.ev)
				got := strings.TrimSpace(out.String())
				if want := strings.TrimSpace(st.want); got != want {
					t.Fatalf("step %d %T%+v:\ngot:\n%s\nwant:\n%s", i, st.ev, st.ev, got, want)
				}
				if out.Empty() != (got == "") {
					t.Fatalf("step %d: Empty()=%v for %q", i, out.Empty(), got)
				}
				if out.ShardMap != nil {
					if err := out.ShardMap.Validate(); err != nil {
						t.Fatalf("step %d: published map invalid: %v", i, err)
					}
					if c.ShardMap() != out.ShardMap {
						t.Fatalf("step %d: ShardMap() does not return the published map", i)
					}
				}
			}
			if c.State() != sc.wantState {
				t.Fatalf("final state %v, want %v", c.State(), sc.wantState)
			}
		})
	}
}

func TestCoreTickAdvancesNow(t *testing.T) {
	c, err := NewCore(Config{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(100, 0)
	c.Step(Tick{Now: t0})
	c.Step(Tick{Now: t0.Add(-time.Second)}) // a clock step back is ignored
	if !c.Now().Equal(t0) {
		t.Fatalf("Now() = %v, want %v", c.Now(), t0)
	}
}

// TestCoreMapDeterministic checks that every join order of the same shards
// publishes the same map.
func TestCoreMapDeterministic(t *testing.T) {
	ids := []string{"s3", "s1", "s10", "s2"}
	var first string
	permute(ids, 0, func(order []string) {
		c, err := NewCore(Config{Shards: len(order), Partitions: 16})
		if err != nil {
			t.Fatal(err)
		}
		var out Output
		for _, id := range order {
			out = c.Step(join(shard(id)))
		}
		if out.ShardMap == nil {
			t.Fatalf("order %v: no map published", order)
		}
		b, err := out.ShardMap.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = string(b)
		} else if string(b) != first {
			t.Fatalf("order %v: map %s, first map %s", order, b, first)
		}
		if want := []string{"s1", "s2", "s3", "s10"}; !reflect.DeepEqual(out.ShardMap.Shards, want) {
			t.Fatalf("shards %v, want %v", out.ShardMap.Shards, want)
		}
	})
}

func permute(s []string, k int, f func([]string)) {
	if k == len(s) {
		f(slices.Clone(s))
		return
	}
	for i := k; i < len(s); i++ {
		s[k], s[i] = s[i], s[k]
		permute(s, k+1, f)
		s[k], s[i] = s[i], s[k]
	}
}

func TestCoreMembers(t *testing.T) {
	c, err := NewCore(Config{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []cluster.Member{worker("w"), shard("b"), shard("a")} {
		c.Step(join(m))
	}
	var got []string
	for _, m := range c.Members("") {
		got = append(got, m.String())
	}
	if want := []string{"ams/a", "ams/b", "worker/w"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Members(\"\") = %v, want %v", got, want)
	}
	if n := len(c.Members(cluster.KindWorker)); n != 1 {
		t.Fatalf("%d workers, want 1", n)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		errs int
	}{
		{Config{Shards: 2}, 0},
		{Config{Shards: 0}, 1},
		{Config{Shards: 70000}, 2}, // also fewer partitions than shards
		{Config{Shards: 8, Partitions: 4}, 1},
		{Config{Shards: 0, Partitions: -1}, 2},
	} {
		_, err := NewCore(tc.cfg)
		if tc.errs == 0 {
			if err != nil {
				t.Errorf("%+v: %v", tc.cfg, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: err %v is not ErrBadConfig", tc.cfg, err)
			continue
		}
		if n := strings.Count(err.Error(), ErrBadConfig.Error()); n != tc.errs {
			t.Errorf("%+v: %d problems reported, want %d: %v", tc.cfg, n, tc.errs, err)
		}
	}
}

func TestCompareIDs(t *testing.T) {
	want := []string{"", "a", "a01", "a1", "a2", "a10", "a10b", "a10c", "ab", "b", "b0009", "b10"}
	got := slices.Clone(want)
	for range 3 {
		slices.Reverse(got)
		slices.SortFunc(got, clusterfsm.CompareIDs)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("sorted %v, want %v", got, want)
		}
	}
	for _, x := range want {
		for _, y := range want {
			if sgn(clusterfsm.CompareIDs(x, y)) != -sgn(clusterfsm.CompareIDs(y, x)) {
				t.Fatalf("clusterfsm.CompareIDs(%q, %q) not antisymmetric", x, y)
			}
		}
	}
}

func sgn(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}
