package ams

// TableRequest names the ids of one table in a pull or push served by a
// shard: by its stripe owners (shard.Shard's Pull and Push), and by a
// shard in the worker's process, which a client calls on the worker's own
// batch buffers (client.LocalShard, implemented by shard.Local).
type TableRequest struct {
	Table string
	IDs   []uint64
	// Rows receives (pull) or holds (push) len(IDs)*dim values, in id order.
	Rows []float32
	// Pos, when set (len(Pos) == len(IDs)), places the row of IDs[k] at
	// Rows[Pos[k]*dim : (Pos[k]+1)*dim] instead of at row k, so that a
	// caller in this process pulls into, or pushes from, its own batch
	// buffer where its ids for this shard are scattered; Rows is then any
	// whole number of rows that every Pos[k] falls inside. A pull's
	// positions must be distinct.
	Pos []int32
}

// DenseRequest is a whole dense vector in a caller's buffer (len(Values)
// is the vector's size), in a pull or push served by a shard in the
// caller's process: a pull writes the shard's range of it, a push reads
// the shard's range of the gradient.
type DenseRequest struct {
	Name   string
	Values []float32
}
