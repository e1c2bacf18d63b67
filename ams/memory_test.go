package ams

import (
	"runtime"
	"testing"
)

// payloadBytesDim16Adagrad is the payload of one dim-16 Adagrad row: an
// 8-byte key, 16 values, 16 accumulators and two uint32 statistics.
const payloadBytesDim16Adagrad = 8 + 16*4 + 16*4 + 8

// TestTableMemoryBytesPerRow checks the accounted footprint of a grown
// table stays within 1.5x of the payload (the benchmark measures RSS).
func TestTableMemoryBytesPerRow(t *testing.T) {
	const rows = 300_000
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 16, Optimizer: OptimizerSpec{Name: OptAdagrad}, Init: InitSpec{Kind: InitZeros}})
	fillTable(tb, 0, rows, 4096)
	perRow := float64(tb.MemoryBytes()) / rows
	t.Logf("%.1f bytes/row accounted (payload %d)", perRow, payloadBytesDim16Adagrad)
	if perRow > 1.5*payloadBytesDim16Adagrad {
		t.Fatalf("%.1f bytes/row, want <= %.0f", perRow, 1.5*payloadBytesDim16Adagrad)
	}
}

// TestTableAllocatesPerChunkNotPerRow checks that creating rows allocates
// only chunks and index arrays, never per-row objects the GC would trace.
func TestTableAllocatesPerChunkNotPerRow(t *testing.T) {
	const rows = 100_000
	tb := newTestTable(t, TableSpec{Name: "t", Dim: 8, Optimizer: OptimizerSpec{Name: OptAdam}, Init: InitSpec{Kind: InitZeros}})
	ids := make([]uint64, 1000)
	out := make([]float32, len(ids)*8)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for base := 0; base < rows; base += len(ids) {
		for i := range ids {
			ids[i] = Mix64(uint64(base + i))
		}
		tb.Pull(ids, out, true, 0)
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > 200 {
		t.Fatalf("%d allocations for %d rows", n, rows)
	}
}

// fillTable creates rows with ids Mix64(lo..hi) by pulls of batch ids.
func fillTable(tb *Table, lo, hi, batch int) {
	d := tb.Dim()
	ids := make([]uint64, batch)
	out := make([]float32, batch*d)
	for base := lo; base < hi; base += batch {
		n := min(batch, hi-base)
		for i := range n {
			ids[i] = Mix64(uint64(base + i))
		}
		tb.Pull(ids[:n], out[:n*d], true, 1)
	}
}
