package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdlgo/xps/internal/clusterfsm"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/internal/cluster"
)

// ErrBadConfig is returned (wrapped) for an invalid Config or Options.
var ErrBadConfig = errors.New("scheduler: bad config")

// State is the cluster state kept by the Core.
type State int

// Cluster states. RESTORING will sit between Degraded and the next Serving.
const (
	// Forming: waiting for the expected number of AMS shards to join.
	Forming State = iota + 1
	// Serving: the shard map of the current version is published and every
	// shard in it is alive.
	Serving
	// Degraded: a shard of the published map is gone; its rows are lost
	// until a restore.
	Degraded
)

func (s State) String() string {
	switch s {
	case Forming:
		return "FORMING"
	case Serving:
		return "SERVING"
	case Degraded:
		return "DEGRADED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Event is an input of Core.Step: MemberJoined, MemberLeft or Tick.
type Event interface{ isEvent() }

// MemberJoined: a member registered.
type MemberJoined struct{ Member cluster.Member }

// MemberLeft: a member is gone, gracefully (it wrote its left marker) or not
// (its lease expired).
type MemberLeft struct {
	Member   cluster.Member
	Graceful bool
}

// Tick: time passed; Now is the driver's clock.
type Tick struct{ Now time.Time }

func (MemberJoined) isEvent() {}
func (MemberLeft) isEvent()   {}
func (Tick) isEvent()         {}

// LeaseExpired returns the event of m's lease expiring.
func LeaseExpired(m cluster.Member) MemberLeft { return MemberLeft{Member: m} }

// Reason says why a Report is made.
type Reason string

// Report reasons; the values are also the cluster.Event types.
const (
	ReasonJoined       Reason = cluster.EventJoined
	ReasonLeft         Reason = cluster.EventLeft
	ReasonLeaseExpired Reason = cluster.EventLeaseExpired
)

// Report is a membership change to record.
type Report struct {
	Member cluster.Member
	Reason Reason
}

// StateChange is a transition of the cluster state.
type StateChange struct {
	From, To State
	// Version is the cluster version after the change.
	Version uint64
	// Cause names the member whose join or loss caused the change.
	Cause string
}

// Output is what one Step asks the driver to do, in this order: record the
// Reports, publish ShardMap if non-nil, record State if non-nil. The zero
// Output asks nothing.
type Output struct {
	Reports  []Report
	ShardMap *ams.ShardMap
	State    *StateChange
}

// Empty reports whether o asks nothing.
func (o Output) Empty() bool { return len(o.Reports) == 0 && o.ShardMap == nil && o.State == nil }

// String renders o one line per action, for logs and tests:
//
//	report joined ams/a
//	publish v1 partitions=16 shards=[a@host:1 b@host:2]
//	state FORMING -> SERVING v1 (ams/b)
func (o Output) String() string {
	var b strings.Builder
	for _, r := range o.Reports {
		fmt.Fprintf(&b, "report %s %s\n", r.Reason, r.Member)
	}
	if m := o.ShardMap; m != nil {
		fmt.Fprintf(&b, "publish v%d partitions=%d shards=[", m.Version, m.Partitions)
		for i := range m.Shards {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(m.Shards[i] + "@" + m.Addrs[i])
		}
		b.WriteString("]\n")
	}
	if s := o.State; s != nil {
		fmt.Fprintf(&b, "state %s -> %s v%d (%s)\n", s.From, s.To, s.Version, s.Cause)
	}
	return b.String()
}

// Config configures a Core.
type Config struct {
	// Shards is the number N of AMS shards the cluster forms with. Required,
	// 1 to 65535.
	Shards int
	// Partitions is the number of virtual partitions P, at least Shards.
	// The default value is ams.DefaultPartitions.
	Partitions int
	// Version is the cluster version of the first shard map. The default
	// value is 1.
	Version uint64
}

// EnsureDefaults fills zero fields with their default values.
func (c *Config) EnsureDefaults() {
	if c.Partitions == 0 {
		c.Partitions = ams.DefaultPartitions
	}
	if c.Version == 0 {
		c.Version = ams.DefaultVersion
	}
}

// Validate reports every problem with the config.
func (c *Config) Validate() error {
	var errs []error
	if c.Shards < 1 || c.Shards > 1<<16-1 {
		errs = append(errs, fmt.Errorf("%w: Shards %d is not in [1, 65535]", ErrBadConfig, c.Shards))
	}
	if c.Partitions < 1 || c.Partitions < c.Shards {
		errs = append(errs, fmt.Errorf("%w: Partitions %d is below 1 or below Shards %d", ErrBadConfig, c.Partitions, c.Shards))
	}
	return errors.Join(errs...)
}

// Core is the scheduler's cluster state machine. It does no I/O, reads no
// clock and starts no goroutine: the driver feeds it events with Step and
// carries out the returned Output. It is not safe for concurrent use.
//
// Transitions:
//
//	FORMING  --Nth AMS joins-->                 SERVING(v), publish map v
//	SERVING  --AMS of the map leaves/expires--> DEGRADED
//
// While FORMING, AMS shards may come and go; the map is built from the N
// live ones once there are N, ordered by ID (digit runs compared as numbers:
// ams-2 before ams-10). An AMS joining later, or a mapped shard coming back,
// is reported only: its rows are lost, and bringing it back is the job of the
// RESTORING state (a later change). Workers and schedulers are reported and
// never change the state.
type Core struct {
	cfg     Config
	state   State
	version uint64
	now     time.Time
	members map[string]cluster.Member // live members by "kind/id"
	smap    *ams.ShardMap             // last published map, nil while FORMING
	inMap   map[string]bool           // AMS ids in smap
}

// NewCore returns a Core in state FORMING.
func NewCore(cfg Config) (*Core, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Core{cfg: cfg, state: Forming, version: cfg.Version,
		members: make(map[string]cluster.Member), inMap: make(map[string]bool)}, nil
}

// State returns the current state.
func (c *Core) State() State { return c.state }

// Version returns the current cluster version.
func (c *Core) Version() uint64 { return c.version }

// ShardMap returns the last map the Core asked to publish (nil while
// FORMING). The caller must not modify it.
func (c *Core) ShardMap() *ams.ShardMap { return c.smap }

// Now returns the time of the last Tick.
func (c *Core) Now() time.Time { return c.now }

// Members returns the live members of kind ("" for all), sorted by kind and
// ID.
func (c *Core) Members(kind string) []cluster.Member {
	var out []cluster.Member
	for _, m := range c.members {
		if kind == "" || m.Kind == kind {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b cluster.Member) int {
		if a.Kind != b.Kind {
			return strings.Compare(a.Kind, b.Kind)
		}
		return clusterfsm.CompareIDs(a.ID, b.ID)
	})
	return out
}

// Step applies one event and returns what the driver must do.
func (c *Core) Step(ev Event) Output {
	var out Output
	switch ev := ev.(type) {
	case MemberJoined:
		c.join(&out, ev.Member)
	case MemberLeft:
		c.leave(&out, ev.Member, ev.Graceful)
	case Tick:
		if ev.Now.After(c.now) {
			c.now = ev.Now
		}
	default:
		panic(fmt.Sprintf("scheduler: unknown event %T", ev))
	}
	return out
}

func (c *Core) join(out *Output, m cluster.Member) {
	key := m.String()
	if old, ok := c.members[key]; ok {
		if old == m {
			return // already known: a replayed join
		}
		// A new incarnation under the same id: the old one is gone.
		c.leave(out, old, false)
	}
	c.members[key] = m
	out.Reports = append(out.Reports, Report{Member: m, Reason: ReasonJoined})
	if m.Kind == cluster.KindAMS && c.state == Forming {
		c.tryForm(out, m)
	}
}

func (c *Core) leave(out *Output, m cluster.Member, graceful bool) {
	key := m.String()
	if known, ok := c.members[key]; ok {
		m = known // the driver may only know kind and id
		delete(c.members, key)
	}
	reason := ReasonLeaseExpired
	if graceful {
		reason = ReasonLeft
	}
	out.Reports = append(out.Reports, Report{Member: m, Reason: reason})
	if m.Kind == cluster.KindAMS && c.state == Serving && c.inMap[m.ID] {
		c.setState(out, Degraded, m.String())
	}
}

// tryForm builds and publishes the first map once N AMS shards are live.
func (c *Core) tryForm(out *Output, cause cluster.Member) {
	shards := c.Members(cluster.KindAMS)
	if len(shards) < c.cfg.Shards {
		return
	}
	ids := make([]string, len(shards))
	addrs := make([]string, len(shards))
	for i, m := range shards {
		ids[i], addrs[i] = m.ID, m.Addr
	}
	smap, err := ams.NewShardMap(c.version, c.cfg.Partitions, ids, addrs)
	if err != nil {
		panic(fmt.Sprintf("scheduler: building shard map from a validated config: %v", err))
	}
	c.smap = smap
	clear(c.inMap)
	for _, id := range ids {
		c.inMap[id] = true
	}
	out.ShardMap = smap
	c.setState(out, Serving, cause.String())
}

func (c *Core) setState(out *Output, to State, cause string) {
	out.State = &StateChange{From: c.state, To: to, Version: c.version, Cause: cause}
	c.state = to
}
