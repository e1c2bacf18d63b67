// Package client is the worker side of the AMS protocol: it routes the
// unique ids of a batch to shards through the shard map (virtual partition
// of (table, id) -> shard), sends one merged request per shard to all shards
// in parallel, and scatters the replies back into the caller's buffers.
//
// NewLocal adds a Resolver for shards that serve in the same process: the
// data plane to those is a direct call, on the caller's own buffers when
// the shard offers it (LocalShard, shard.Local), and gRPC stays for the
// rest; errors match on both paths.
//
// A Client is safe for concurrent use; each call allocates its own routing
// state. Buffers passed in are owned by the caller and are not retained
// after a call returns.
package client
