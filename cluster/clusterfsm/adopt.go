package clusterfsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// adoptionLoss notes the loss of m before the first tick decides on the
// adopted cluster: a shard of its map, or a worker of its deal that did
// not leave gracefully, takes state with it.
func (c *Core) adoptionLoss(m Member, graceful bool, cause string) {
	if !graceful && c.waitable(m) {
		if cur, ok := c.members[m.key()]; !ok || cur.Life == m.Life {
			return // its life may register again: the first tick decides
		}
	}
	switch {
	case m.Kind == KindAMS && slices.Contains(c.adopt.Shards, m.ID):
	case m.Kind == KindWorker && slices.Contains(c.dealt, m.ID):
		if graceful {
			// Its reader positions are stored: its share is dealt anew.
			c.dealt = slices.DeleteFunc(c.dealt, func(id string) bool { return id == m.ID })
			c.adoptRedeal = true
			return
		}
	default:
		return
	}
	if c.adoptLost == "" {
		c.adoptLost = cause
	}
}

// decideAdoption runs at the first tick, the end of the driver's initial
// sync: serve on at the adopted version if its state is intact, else
// restore as after any loss.
func (c *Core) decideAdoption(o *Output) {
	a := c.adopt
	c.adopt = nil
	c.slots = slices.Clone(a.Shards)
	dealt, redeal := c.dealt, c.adoptRedeal
	why, away := c.adoptedStateLost(a, dealt)
	c.dealt, c.adoptRedeal, c.adoptLost = nil, false, ""
	if a.Stopped {
		// Stopped on purpose: nothing to recover; form anew once the
		// slots are filled.
		cause := fmt.Sprintf("adopting v%d: it was stopped", a.Version)
		c.leaveServing(o, Stopped, cause)
		c.restart(o, cause)
		return
	}
	if why == "" && len(away) > 0 {
		// Members of the adopted cluster are not live, but their lives
		// may register again with their state: wait for them, paused.
		c.setState(o, State{Phase: Degraded, Version: a.Version}, fmt.Sprintf("adopting v%d: waiting for %s", a.Version,
			strings.Join(slices.Sorted(maps.Keys(away)), ", ")))
		c.emit(o, PauseWorkers{Version: a.Version})
		c.away, c.awaySince = away, c.now
		return
	}
	if why != "" {
		cause := fmt.Sprintf("adopting v%d: %s", a.Version, why)
		// Workers may be training at a.Version, or paused by the previous
		// leader: pause them either way.
		c.setState(o, State{Phase: Degraded, Version: c.state.Version}, cause)
		c.emit(o, PauseWorkers{Version: c.state.Version})
		c.tryRestore(o, cause)
		return
	}
	// c.state.Version is a.Version: Options.Validate refuses a higher
	// LastVersion and EnsureDefaults raises a lower one.
	c.setState(o, State{Phase: Serving, Version: a.Version}, fmt.Sprintf("adopted v%d", a.Version))
	c.snapMark = c.now
	if !redeal && slices.Equal(c.ids(KindWorker), dealt) {
		// Workers carry on with their shares; this releases any the
		// previous leader left paused.
		c.emit(o, Resume{Version: a.Version})
		return
	}
	c.dealAnew(o)
}

// waitable reports whether m is a member of the adopted cluster whose
// life the previous leader recorded, and that may be waited for.
func (c *Core) waitable(m Member) bool {
	a := c.adopt
	return c.opts.RejoinWait > 0 && m.Life != "" && a != nil && a.Lives[m.key()] == m.Life &&
		(m.Kind == KindAMS && slices.Contains(a.Shards, m.ID) || m.Kind == KindWorker && slices.Contains(c.dealt, m.ID))
}

// adoptedStateLost says why the state of the adopted cluster is lost, or
// returns "" when it is intact but for the members of away (by
// "kind/id", with their recorded lives), which are not live and may
// register again.
func (c *Core) adoptedStateLost(a *Adopted, dealt []string) (string, map[string]string) {
	if c.adoptLost != "" {
		return c.adoptLost, nil
	}
	if !a.Serving {
		return "it was not serving", nil
	}
	away := map[string]string{}
	check := func(kind Kind, id string) string {
		key := string(kind) + "/" + id
		life := a.Lives[key]
		m, ok := c.members[key]
		switch {
		case !ok && life != "" && c.opts.RejoinWait > 0:
			away[key] = life
		case !ok && kind == KindAMS:
			return fmt.Sprintf("shard %s is not live", id)
		case !ok:
			return fmt.Sprintf("worker %s is gone", id)
		case life != "" && m.Life != "":
			if m.Life != life {
				return fmt.Sprintf("%v is another life than the one recorded", m)
			}
		case kind == KindAMS && a.MaxIncarnation != 0 && m.Incarnation > a.MaxIncarnation:
			return fmt.Sprintf("%v registered after the map", m)
		}
		return ""
	}
	for _, id := range a.Shards {
		if why := check(KindAMS, id); why != "" {
			return why, nil
		}
	}
	for _, id := range dealt {
		if why := check(KindWorker, id); why != "" {
			return why, nil
		}
	}
	return "", away
}
