package job

import (
	"google.golang.org/grpc"

	"github.com/xdlgo/xps/cluster/tlsconf"
)

// dialOptions are the extra dial options of the worker's clients of the
// shards: mutual TLS when Options.TLS is set.
func (e *Env) dialOptions() []grpc.DialOption { return tlsconf.DialOptions(e.TLS) }
