package ams

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Run:
//
//	go test -run='^$' -bench=TableMemory -benchtime=1x ./ams
//	go test -run='^$' -bench='TablePull|TablePush' ./ams

func BenchmarkTableMemory_10M_Dim16_Adagrad(b *testing.B) {
	benchTableMemory(b, 10_000_000, 16, OptAdagrad, 1, false)
}
func BenchmarkTableMemory_10M_Dim16_Adagrad_Reserved(b *testing.B) {
	benchTableMemory(b, 10_000_000, 16, OptAdagrad, 1, true)
}
func BenchmarkTableMemory_10M_Dim16_Adagrad_4Stripes(b *testing.B) {
	benchTableMemory(b, 10_000_000, 16, OptAdagrad, 4, false)
}

func BenchmarkTablePull_Dim16(b *testing.B)     { benchTablePull(b, 16, 1_000_000, 4096) }
func BenchmarkTablePull_Dim64(b *testing.B)     { benchTablePull(b, 64, 1_000_000, 4096) }
func BenchmarkTablePush_Dim16_SGD(b *testing.B) { benchTablePush(b, 16, OptSGD, 1_000_000, 4096) }
func BenchmarkTablePush_Dim16_Adagrad(b *testing.B) {
	benchTablePush(b, 16, OptAdagrad, 1_000_000, 4096)
}
func BenchmarkTablePush_Dim16_Adam(b *testing.B) { benchTablePush(b, 16, OptAdam, 1_000_000, 4096) }
func BenchmarkTablePush_Dim16_FTRL(b *testing.B) { benchTablePush(b, 16, OptFTRL, 1_000_000, 4096) }

// The 2M-row dim-18 variants match a production stripe: rows, state and
// index far exceed the L2 cache, so they show the random-access cost.
func BenchmarkTablePull_Dim18_2M(b *testing.B) { benchTablePull(b, 18, 2_000_000, 4096) }
func BenchmarkTablePush_Dim18_2M_Adagrad(b *testing.B) {
	benchTablePush(b, 18, OptAdagrad, 2_000_000, 4096)
}
func BenchmarkTableCreate_Dim16_Adagrad(b *testing.B) { benchTableCreate(b, 16, OptAdagrad, 4096) }

// rssBytes returns the resident set size after a full GC that returns
// free memory to the OS, read from /proc/self/statm (Linux only).
func rssBytes(b *testing.B) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skipf("no /proc/self/statm: %v", err)
	}
	f := bytes.Fields(data)
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// benchTableMemory inserts rows of dim values with the optimizer's state
// into stripes tables (ids routed by Mix64(id) % stripes, as a shard with
// that many stripes would) and reports the RSS growth per row, and the
// footprint the tables account for (MemoryBytes). reserve pre-sizes the
// indexes; without it they grow by doubling, and the old arrays become
// garbage that the GC returns before the second RSS reading.
func benchTableMemory(b *testing.B, rows, dim int, opt string, stripes int, reserve bool) {
	const batch = 4096
	spec := TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: opt}, Init: InitSpec{Kind: InitUniform}}
	probe := newTestTable(b, spec)
	payload := float64(8 + 4*dim + 4*probe.opt.StateWidth(dim) + 8)
	ids := make([][]uint64, stripes)
	for s := range ids {
		ids[s] = make([]uint64, 0, batch)
	}
	out := make([]float32, batch*dim)
	var perRow, accounted float64
	b.StopTimer()
	for range b.N {
		tables := make([]*Table, stripes)
		before := rssBytes(b)
		for s := range tables {
			tables[s] = newTestTable(b, spec)
			if reserve {
				tables[s].Reserve(rows/stripes + rows/stripes/50)
			}
		}
		b.StartTimer()
		for i := range rows {
			id := Mix64(uint64(i) ^ 0xabcdef)
			s := int(Mix64(id) % uint64(stripes))
			ids[s] = append(ids[s], id)
			if len(ids[s]) == batch {
				tables[s].Pull(ids[s], out, true, 1)
				ids[s] = ids[s][:0]
			}
		}
		for s := range tables {
			tables[s].Pull(ids[s], out[:len(ids[s])*dim], true, 1)
			ids[s] = ids[s][:0]
		}
		b.StopTimer()
		after := rssBytes(b)
		n, mem := 0, int64(0)
		for _, t := range tables {
			n += t.Len()
			mem += t.MemoryBytes()
		}
		if n != rows {
			b.Fatalf("%d rows, want %d", n, rows)
		}
		perRow = float64(after-before) / float64(rows)
		accounted = float64(mem) / float64(rows)
		runtime.KeepAlive(tables)
	}
	b.ReportMetric(perRow, "bytes/row")
	b.ReportMetric(perRow/payload, "payload-ratio")
	b.ReportMetric(accounted, "accounted-bytes/row")
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// residentTable returns a table with rows resident rows of ids Mix64(0..rows)
// and batches of random resident ids.
func residentTable(b *testing.B, dim int, opt string, rows, batch int) (*Table, [][]uint64) {
	tb := newTestTable(b, TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: opt}, Init: InitSpec{Kind: InitUniform}})
	fillTable(tb, 0, rows, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([][]uint64, 64)
	for i := range batches {
		batches[i] = make([]uint64, batch)
		for k := range batches[i] {
			batches[i][k] = Mix64(uint64(rng.IntN(rows)))
		}
	}
	return tb, batches
}

func benchTablePull(b *testing.B, dim, rows, batch int) {
	tb, batches := residentTable(b, dim, OptAdagrad, rows, batch)
	out := make([]float32, batch*dim)
	n := 0
	for b.Loop() {
		tb.Pull(batches[n%len(batches)], out, true, 2)
		n++
	}
	b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "rows/s")
}

func benchTablePush(b *testing.B, dim int, opt string, rows, batch int) {
	tb, batches := residentTable(b, dim, opt, rows, batch)
	grads := make([]float32, batch*dim)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range grads {
		grads[i] = float32(rng.NormFloat64() * 1e-3)
	}
	n := 0
	for b.Loop() {
		tb.Push(batches[n%len(batches)], grads, 2)
		n++
	}
	b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "rows/s")
}

// benchTableCreate measures row creation (index insert with growth, init,
// state init) by pulls of new ids.
func benchTableCreate(b *testing.B, dim int, opt string, batch int) {
	tb := newTestTable(b, TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: opt}, Init: InitSpec{Kind: InitNormal}})
	ids := make([]uint64, batch)
	out := make([]float32, batch*dim)
	n := 0
	for b.Loop() {
		for k := range ids {
			ids[k] = Mix64(uint64(n*batch + k))
		}
		tb.Pull(ids, out, true, 1)
		n++
	}
	b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkGather compares a table's pull of values (64-byte rows: dim 16,
// SGD, so no optimizer state) at 10M and 50M rows against a bare Go gather
// of 64-byte rows by position from one plain []float32 of the same row
// count, the same random rows in the same order, in the same run. It
// reports both rates and ours/bare. Rows live in mmap'd huge-page regions
// in the default build and on the heap with -tags purego.
//
// It also times the two halves of the table's gather on their own, each on
// random ids of its own (so that no phase warms the cache for another):
// the index lookups alone (index-rows/s) and the copies of rows by their
// known slots (slab-rows/s). A hash-indexed gather makes both random
// accesses for every id, so 1/(1/index + 1/slab) is what it costs
// without overlap between them; ours at or above that figure means the
// table's own code adds nothing over its two memory accesses. Last, the
// bare loop runs on two goroutines at once, each on rows of its own
// (bare2-rows/s, the pair's total): whether a shard's stripes gathering
// in parallel can add up on this machine.
func BenchmarkGather(b *testing.B) {
	for _, rows := range []int{10_000_000, 50_000_000} {
		b.Run(fmt.Sprintf("rows=%dM", rows/1_000_000), func(b *testing.B) {
			const dim, batch = 16, 4096
			tb := newTestTable(b, TableSpec{Name: "emb", Dim: dim, Optimizer: OptimizerSpec{Name: OptSGD}, Init: InitSpec{Kind: InitUniform}})
			tb.Reserve(rows)
			fillTable(tb, 0, rows, 4096)
			plain := make([]float32, rows*dim)
			for i := range plain {
				plain[i] = float32(i)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			pos := make([][]int, 64)
			ids := make([][]uint64, len(pos))
			for i := range pos {
				pos[i], ids[i] = make([]int, batch), make([]uint64, batch)
				for k := range pos[i] {
					p := rng.IntN(rows)
					pos[i][k], ids[i][k] = p, Mix64(uint64(p))
				}
			}
			out := make([]float32, batch*dim)
			// The halves get ids of their own, so that no phase warms the
			// cache for another.
			idxIDs := randomIDSets(rng, len(ids), batch, rows)
			slots := make([][]uint32, len(ids))
			for i, o := range randomIDSets(rng, len(ids), batch, rows) {
				slots[i] = make([]uint32, batch)
				for k, id := range o {
					slots[i][k], _ = tb.idx.get(id)
				}
			}
			var ours, bare, index, slab time.Duration
			var sum uint32
			n := 0
			for b.Loop() {
				t0 := time.Now()
				tb.Pull(ids[n%len(ids)], out, false, 1)
				t1 := time.Now()
				for k, p := range pos[n%len(pos)] {
					copy(out[k*dim:(k+1)*dim], plain[p*dim:(p+1)*dim])
				}
				t2 := time.Now()
				for _, id := range idxIDs[n%len(idxIDs)] {
					s, _ := tb.idx.get(id)
					sum += s
				}
				t3 := time.Now()
				for k, s := range slots[n%len(slots)] {
					copy(out[k*dim:(k+1)*dim], tb.rows.row(s)[:dim])
				}
				slab += time.Since(t3)
				index += t3.Sub(t2)
				bare += t2.Sub(t1)
				ours += t1.Sub(t0)
				n++
			}
			runtime.KeepAlive(sum)
			bare2 := gatherTwice(rng, plain, dim, batch, n*batch)
			b.ReportMetric(float64(n*batch)/ours.Seconds(), "ours-rows/s")
			b.ReportMetric(float64(n*batch)/bare.Seconds(), "bare-rows/s")
			b.ReportMetric(bare.Seconds()/ours.Seconds(), "ours/bare")
			b.ReportMetric(float64(n*batch)/index.Seconds(), "index-rows/s")
			b.ReportMetric(float64(n*batch)/slab.Seconds(), "slab-rows/s")
			b.ReportMetric(float64(2*n*batch)/bare2.Seconds(), "bare2-rows/s")
		})
	}
}

// randomIDSets returns sets of batch ids of random rows of BenchmarkGather's
// table.
func randomIDSets(rng *rand.Rand, sets, batch, rows int) [][]uint64 {
	o := make([][]uint64, sets)
	for i := range o {
		o[i] = make([]uint64, batch)
		for k := range o[i] {
			o[i][k] = Mix64(uint64(rng.IntN(rows)))
		}
	}
	return o
}

// gatherTwice times two goroutines each gathering n random rows of dim
// from plain at once, by batches of batch rows. Every row is drawn afresh,
// so that none comes back while it may still be cached.
func gatherTwice(rng *rand.Rand, plain []float32, dim, batch, n int) time.Duration {
	rows := len(plain) / dim
	fresh := [2][]int{make([]int, n), make([]int, n)}
	for _, f := range fresh {
		for i := range f {
			f[i] = rng.IntN(rows)
		}
	}
	var wg sync.WaitGroup
	t0 := time.Now()
	for _, f := range fresh {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float32, batch*dim)
			for i, p := range f {
				k := i % batch
				copy(buf[k*dim:(k+1)*dim], plain[p*dim:(p+1)*dim])
			}
		}()
	}
	wg.Wait()
	return time.Since(t0)
}
