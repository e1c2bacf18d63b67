package clusterfsm

import (
	"fmt"
	"slices"
)

// adoptionLoss notes the loss of m before the first tick decides on the
// adopted cluster: a shard of its map, or a worker of its deal that did
// not leave gracefully, takes state with it.
func (c *Core) adoptionLoss(m Member, graceful bool, cause string) {
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
	why := c.adoptedStateLost(a, dealt)
	c.dealt, c.adoptRedeal, c.adoptLost = nil, false, ""
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

// adoptedStateLost says why the state of the adopted cluster is lost, or
// returns "" when it is intact.
func (c *Core) adoptedStateLost(a *Adopted, dealt []string) string {
	if c.adoptLost != "" {
		return c.adoptLost
	}
	if !a.Serving {
		return "it was not serving"
	}
	for _, id := range a.Shards {
		m, ok := c.members[string(KindAMS)+"/"+id]
		switch {
		case !ok:
			return fmt.Sprintf("shard %s is not live", id)
		case a.MaxIncarnation != 0 && m.Incarnation > a.MaxIncarnation:
			return fmt.Sprintf("%v registered after the map", m)
		}
	}
	for _, id := range dealt {
		if !c.live(KindWorker, id) {
			return fmt.Sprintf("worker %s is gone", id)
		}
	}
	return ""
}
