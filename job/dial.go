package job

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// dialOptions are the extra dial options of the worker's clients of the
// shards: mutual TLS when Options.TLS is set.
func (e *Env) dialOptions() []grpc.DialOption {
	if e.TLS == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(e.TLS))}
}
