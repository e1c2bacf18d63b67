// Package cluster starts a whole cluster inside one process, as etcd's
// embed package does for etcd: an embedded etcd
// on loopback, N AMS shards each serving gRPC on its own loopback port and
// registered under a lease, and the scheduler. The parts talk exactly as
// separate processes would (etcd client, gRPC over TCP); only the process
// boundary is missing. It backs `worker -local`, integration tests and
// programs that train in one process (examples/).
//
// The one shortcut is opt-in: a Cluster is a client.Resolver, and a worker
// given it (job.Options.Local, the default of `worker -local`) pulls
// and pushes rows by calling the shards' services directly, skipping
// HTTP/2 framing, the loopback socket and the copies on both sides. Every
// other call (declare, state, snapshots, restores) still goes through
// gRPC, and a shard that is stopped or restarted drops out of the resolver,
// so failures look the same on both paths.
//
// Start starts everything; Close stops it in reverse order and removes the
// temporary etcd directory it created.
//
// # Files
//
//   - cluster.go: Options and Cluster (Start, RestartShard, Local, Close): an embedded etcd, the shards and the scheduler in this process.
//   - job.go: StartFor, a cluster for a job run in this process (`worker -local`), and StatusHandler.
//   - models.go: the model root: the trained models of the last KeptModels jobs, older ones pruned.
package cluster
