package ops

import (
	"context"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// RPCBuckets are the latency buckets of RPC histograms: 100µs to about
// 50s, in steps of 2x (a pull is sub-millisecond on loopback, a snapshot
// write seconds).
var RPCBuckets = prometheus.ExponentialBuckets(100e-6, 2, 20)

// GRPCServerMetrics returns server options that observe every RPC's
// latency in the histogram <Namespace>_<subsystem>_rpc_seconds, labelled
// by method (its short name) and status code, registered on reg (or the
// one already registered there, by a server of the same subsystem that
// ran before: a restarted server continues its series).
func GRPCServerMetrics(reg prometheus.Registerer, subsystem string) []grpc.ServerOption {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Subsystem: subsystem, Name: "rpc_seconds",
		Help: "Latency of the RPCs served, by method and status code.", Buckets: RPCBuckets}, []string{"method", "code"})
	if err := reg.Register(h); err != nil {
		are, ok := err.(prometheus.AlreadyRegisteredError)
		if !ok {
			panic(err) // a programming error: another metric of the same name
		}
		h = are.ExistingCollector.(*prometheus.HistogramVec) // a server started again: one series
	}
	observe := func(method string, start time.Time, err error) {
		h.WithLabelValues(path.Base(method), status.Code(err).String()).Observe(time.Since(start).Seconds())
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := handler(ctx, req)
			observe(info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			start := time.Now()
			err := handler(srv, ss)
			observe(info.FullMethod, start, err)
			return err
		}),
	}
}
