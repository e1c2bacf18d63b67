package ams

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/xdlgo/xps/model/hashmix"
)

// DefaultPartitions is the number of virtual partitions P used when none is
// configured. It is fixed for the life of a model: a snapshot written with P
// partitions is restored with the same P onto any number of shards.
const DefaultPartitions = 4096

// Partition returns the virtual partition of feature id in table:
// a 64-bit mix of FNV-1a(table) and id, reduced modulo partitions.
// The function is part of the snapshot format and never changes.
func Partition(table string, id uint64, partitions int) uint32 {
	return SaltedPartition(TableHash(table), id, partitions)
}

// SaltedPartition is Partition with the table's hash (TableHash) given,
// for callers that partition many ids of one table.
func SaltedPartition(salt, id uint64, partitions int) uint32 {
	return uint32(mix64(salt^id) % uint64(partitions))
}

// TableHash is the 64-bit FNV-1a hash of a table name.
func TableHash(table string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(table); i++ {
		h ^= uint64(table[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the splitmix64 finalizer shared by partitioning, striping, the
// index and the initializers.
func mix64(x uint64) uint64 { return hashmix.Mix64(x) }

// Mix64 exposes the splitmix64 finalizer used for partitioning and striping.
func Mix64(x uint64) uint64 { return hashmix.Mix64(x) }

// ShardMap assigns each virtual partition to a shard. It is published by the
// scheduler (as JSON in etcd) and read by workers to route requests.
//
// Invariants: len(Assign) == Partitions; every Assign[p] < len(Shards).
type ShardMap struct {
	// Version is the cluster version the map belongs to (1 until the
	// fault-tolerance work bumps it on restore).
	Version uint64 `json:"version"`
	// Partitions is the number of virtual partitions P.
	Partitions int `json:"partitions"`
	// Shards lists shard IDs in shard-index order.
	Shards []string `json:"shards"`
	// Addrs lists the gRPC address of each shard, parallel to Shards.
	Addrs []string `json:"addrs"`
	// Assign maps partition -> shard index.
	Assign []uint16 `json:"assign"`
}

// NewShardMap spreads partitions round-robin over the given shards.
func NewShardMap(version uint64, partitions int, shards, addrs []string) (*ShardMap, error) {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	if len(shards) == 0 || len(shards) != len(addrs) {
		return nil, fmt.Errorf("%w: %d shard ids for %d addresses", ErrBadShardMap, len(shards), len(addrs))
	}
	if len(shards) > 1<<16-1 {
		return nil, fmt.Errorf("%w: %d shards is too many", ErrBadShardMap, len(shards))
	}
	if partitions > MaxPartitions {
		return nil, fmt.Errorf("%w: %d partitions, above the limit of %d", ErrBadShardMap, partitions, MaxPartitions)
	}
	m := &ShardMap{Version: version, Partitions: partitions,
		Shards: append([]string(nil), shards...), Addrs: append([]string(nil), addrs...),
		Assign: make([]uint16, partitions)}
	for p := range m.Assign {
		m.Assign[p] = uint16(p % len(shards))
	}
	return m, nil
}

// MaxPartitions bounds a shard map's partitions: the map is one etcd
// value (1.5 MiB by default) and every worker and shard holds it, and
// partitions beyond a few thousand per shard only slow rebalancing.
const MaxPartitions = 1 << 16

// Validate checks the map's invariants.
func (m *ShardMap) Validate() error {
	if m.Partitions > MaxPartitions {
		return fmt.Errorf("%w: %d partitions, above the limit of %d", ErrBadShardMap, m.Partitions, MaxPartitions)
	}
	if m.Partitions <= 0 || len(m.Assign) != m.Partitions {
		return fmt.Errorf("%w: %d partitions, %d assignments", ErrBadShardMap, m.Partitions, len(m.Assign))
	}
	if len(m.Shards) == 0 || len(m.Shards) != len(m.Addrs) {
		return fmt.Errorf("%w: %d shard ids for %d addresses", ErrBadShardMap, len(m.Shards), len(m.Addrs))
	}
	for p, s := range m.Assign {
		if int(s) >= len(m.Shards) {
			return fmt.Errorf("%w: partition %d assigned to shard %d of %d", ErrBadShardMap, p, s, len(m.Shards))
		}
	}
	return nil
}

// ShardOf returns the shard index that owns id in table.
func (m *ShardMap) ShardOf(table string, id uint64) int {
	return int(m.Assign[Partition(table, id, m.Partitions)])
}

// Marshal encodes the map as JSON.
func (m *ShardMap) Marshal() ([]byte, error) { return json.Marshal(m) }

// UnmarshalShardMap decodes and validates a JSON shard map.
func UnmarshalShardMap(b []byte) (*ShardMap, error) {
	var m ShardMap
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadShardMap, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// StateShard is the shard of n that holds state key (PutState): FNV-1a of
// the key modulo n, so state moves with the shard count like rows do.
func StateShard(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64() % uint64(n))
}

// DenseRange returns the half-open range [lo, hi) of a flat dense vector of
// length n that shard i of nShards owns: contiguous, balanced ranges.
func DenseRange(n, i, nShards int) (lo, hi int) {
	return n * i / nShards, n * (i + 1) / nShards
}

// PackIDs encodes ids as packed little-endian uint64s, appending to dst.
func PackIDs(dst []byte, ids []uint64) []byte {
	off := len(dst)
	dst = append(dst, make([]byte, 8*len(ids))...)
	for i, id := range ids {
		binary.LittleEndian.PutUint64(dst[off+8*i:], id)
	}
	return dst
}

// UnpackIDs decodes packed little-endian uint64s into dst (reused if large
// enough). It fails when len(b) is not a multiple of 8.
func UnpackIDs(dst []uint64, b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("ams: packed ids: %d bytes is not a multiple of 8", len(b))
	}
	n := len(b) / 8
	if cap(dst) < n {
		dst = make([]uint64, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return dst, nil
}
