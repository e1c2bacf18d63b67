// Package amsnode runs one AMS shard as a cluster member: the shard, its
// gRPC server on a TCP listener, and its etcd registration under a lease
// (the lease keep-alive is the shard's heartbeat). cmd/ams and the embedded
// local cluster both use it, so a shard in one process behaves exactly as a
// shard in its own process.
//
// Start starts the serving goroutine; Close deregisters (a clean leave),
// stops the gRPC server and then the shard, in that order.
package amsnode
