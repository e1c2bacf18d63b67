package scheduler

import (
	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/tlsconf"
)

// newClient returns a client of the shards of m, speaking mutual TLS with
// the scheduler's identity when it has one (Options.TLS).
func (s *Scheduler) newClient(m *ams.ShardMap) (*client.Client, error) {
	return client.New(m, tlsconf.DialOptions(s.opts.TLS)...)
}
