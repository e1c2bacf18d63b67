// Command tierbench grows a table on an in-process AMS shard to -rows rows
// by training it (package cmd/tierbench/internal/tierbench) and writes a CSV
// of its throughput and memory as it grows to standard output:
//
//	tierbench -rows 200000000 -budget 20000000 -tier-dir /ssd/tier [-dim 16] [-batch 4096] [-new 0.5]
//
// Without -tier-dir the table is in memory (with -budget, the budget drops
// the rows it evicts).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/xdlgo/xps/cmd/tierbench/internal/tierbench"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	var o tierbench.Options
	flag.Int64Var(&o.Rows, "rows", 10_000_000, "rows the table grows to")
	flag.IntVar(&o.Dim, "dim", 16, "row width")
	flag.IntVar(&o.Batch, "batch", 4096, "unique ids per batch")
	flag.Float64Var(&o.NewFraction, "new", 0.5, "share of a batch's ids never seen before")
	flag.Float64Var(&o.ZipfS, "zipf", 1.1, "Zipf exponent of the other ids, over the ids created so far")
	flag.Int64Var(&o.Budget, "budget", 0, "DRAM budget in rows (0: none)")
	flag.StringVar(&o.TierDir, "tier-dir", "", "directory of the cold tier (the table is tiered; needs -budget)")
	flag.IntVar(&o.Stripes, "stripes", 2, "stripe owners")
	flag.Int64Var(&o.Every, "every", 0, "rows between CSV rows (default rows/50)")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the batches")
	cli.ParseCommandLine("tierbench")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := tierbench.Run(ctx, o, os.Stdout); err != nil {
		cli.Fatal("tierbench", err)
	}
}
