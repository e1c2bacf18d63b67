package ams

import "fmt"

// Limits of one request to a shard, and of one AMS gRPC message. A legit
// request is a worker's batch, or a part of it: the unique ids of its
// tables that one shard owns, their rows (a pull's reply) or gradients (a
// push), and the shard's ranges of the dense vectors. The largest batches
// the benchmarks send (batch 5000 of the CTR benchmark, about 180,000
// unique ids of dim 18 on one shard) are 5 to 20 times below these limits.
const (
	// MaxRequestIDs bounds the ids of one pull or push to one shard, over
	// all its tables: 4,194,304 ids, 32 MiB packed. It is thereby the most
	// rows one pull with create (or one push) adds to a shard.
	MaxRequestIDs = 1 << 22
	// MaxRequestValues bounds the row values of one pull or push to one
	// shard, ids x dim over all its tables: 16,777,216 float32s, 64 MiB
	// (a million ids of dim 16).
	MaxRequestValues = 1 << 24
	// MaxDenseValues bounds the dense values of one pull or push to one
	// shard (the sum of the shard's ranges of the vectors it names or
	// carries), and so the shard's range of one dense vector: 16,777,216
	// float32s, 64 MiB.
	MaxDenseValues = 1 << 24
	// maxMessageOverhead is the room of a message for everything else:
	// table and vector names, protobuf framing, the state entries a
	// sync-mode part or a PutState carries.
	maxMessageOverhead = 16 << 20
	// MaxMessageBytes bounds one AMS gRPC message in either direction:
	// the largest request within the limits above, with its ids packed
	// (8 bytes), its row and dense values (4 bytes each) and the overhead,
	// 176 MiB. A shard's server refuses a larger message from its gRPC
	// length prefix, before reading its body, and the client cannot send
	// one: the call fails with ErrTooLarge.
	MaxMessageBytes = 8*MaxRequestIDs + 4*MaxRequestValues + 4*MaxDenseValues + maxMessageOverhead
)

// CheckRequestSize reports whether a pull or push to one shard of ids
// ids, values row values (ids x dim over its tables) and dense dense
// values keeps within MaxRequestIDs, MaxRequestValues and
// MaxDenseValues: when it does not, an error that wraps ErrTooLarge and
// names the limit.
func CheckRequestSize(ids, values, dense int) error {
	switch {
	case ids > MaxRequestIDs:
		return fmt.Errorf("%w: %d ids in one request to a shard, more than %d (ams.MaxRequestIDs): split the batch", ErrTooLarge, ids, MaxRequestIDs)
	case values > MaxRequestValues:
		return fmt.Errorf("%w: %d row values (ids x dim) in one request to a shard, more than %d (ams.MaxRequestValues): split the batch", ErrTooLarge, values, MaxRequestValues)
	case dense > MaxDenseValues:
		return fmt.Errorf("%w: %d dense values in one request to a shard, more than %d (ams.MaxDenseValues): use more shards", ErrTooLarge, dense, MaxDenseValues)
	}
	return nil
}
