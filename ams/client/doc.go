// Package client is the worker side of the AMS protocol: it routes the
// unique ids of a batch to shards through the shard map (virtual partition
// of (table, id) -> shard), sends one merged request per shard to all shards
// in parallel, and scatters the replies back into the caller's buffers.
//
// A Client is safe for concurrent use; each call allocates its own routing
// state. Buffers passed in are owned by the caller and are not retained
// after a call returns.
package client
