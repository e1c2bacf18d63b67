// Package local starts a whole cluster inside one process: an embedded etcd
// on loopback, N AMS shards each serving gRPC on its own loopback port and
// registered under a lease, and the scheduler. The parts talk exactly as
// separate processes would (etcd client, gRPC over TCP); only the process
// boundary is missing. It backs `worker -local` and integration tests.
//
// Start starts everything; Close stops it in reverse order and removes the
// temporary etcd directory it created.
package local
