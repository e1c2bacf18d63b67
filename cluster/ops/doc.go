// Package ops serves a process's operations endpoints over HTTP, beside its
// real work: Prometheus metrics, liveness and readiness for Kubernetes
// probes, and whatever page the process adds (the scheduler's status page).
//
//	GET /metrics   Prometheus text format of the process's registry
//	GET /healthz   200 "ok" while the process runs (liveness)
//	GET /readyz    200 "ready" once SetReady(true), else 503 with the reason
//
// Invariants:
//  1. Every process has its own Registry (no global state): the Go runtime
//     and process collectors plus what the process registers. Tests run
//     several servers in one process.
//  2. Readiness starts false and follows SetReady / SetNotReady only; a
//     process about to stop sets it false first (SIGTERM: Kubernetes stops
//     sending it traffic before it leaves).
//  3. Close stops the listener and waits for the serving goroutine; handlers
//     in flight are given a short grace period.
//  4. Every metric is named xps_<subsystem>_<name> (Namespace); RPC
//     latencies are histograms of RPCBuckets, by method and status code
//     (GRPCServerMetrics).
//  5. Metrics are read at scrape time (collectors over the process's own
//     counters) or updated off the hot path (one histogram observation per
//     RPC): scraping never takes a lock the data plane holds.
//
// # Files
//
//   - ops.go: Namespace, NewRegistry and Server, the HTTP server of /metrics, /healthz and /readyz.
//   - descs.go: Descs, a collector's metric descriptions by short name.
//   - grpc.go: RPCBuckets and GRPCServerMetrics, the RPC latency histograms of a gRPC server.
package ops
