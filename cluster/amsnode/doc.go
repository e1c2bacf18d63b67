// Package amsnode runs one AMS shard as a cluster member: the shard, its
// gRPC server on a TCP listener (shared, in a plaintext cluster, with the
// data plane's TCP streams: stream.Mux), and its etcd registration under a lease
// (the lease keep-alive is the shard's heartbeat). cmd/ams and the embedded
// local cluster both use it, so a shard in one process behaves exactly as a
// shard in its own process.
//
// The shard starts blank (shard.Options.Blank): it serves no cluster
// version, refusing every request, until the scheduler begins it (a new
// cluster) or restores a snapshot onto it. A process restarted under the
// id of a shard whose lease has not expired yet, empty, therefore takes
// no part in the version its predecessor served: the workers' requests
// and the scheduler's snapshot fail on it until the scheduler, having seen
// the old lease expire, restores the cluster.
//
// A node never stops on its own. When its lease is lost (etcd unreachable
// for longer than the TTL, or the lease revoked) it keeps serving and
// keeps its rows, and registers again, as the same member (same PID and
// start time), as soon as etcd answers: the rows are the model, and the
// scheduler, not the shard, decides whether the cluster serves on or
// restores.
//
// Start starts the serving goroutine; Close deregisters (a clean leave),
// stops the gRPC server, then the TCP streams (waiting for the requests
// they serve), then the shard, in that order.
//
// # Files
//
//   - amsnode.go: Options and Node: Start (shard, gRPC server, registration in etcd) and Close.
//   - metrics.go: the Prometheus collector of a shard's figures, read at scrape time.
//   - state.go: checkState, the shard's check that a checkpoint key's value is a checkpoint.
package amsnode
