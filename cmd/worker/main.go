// Command worker runs a worker's job (xps.Train): a CTR model, or with
// -output slide an extreme multi-label classifier whose SLIDE output
// layer lives in this worker. `worker -local` runs everything in one
// process (embedded etcd, AMS shards, scheduler, this worker); `worker
// -etcd HOST:PORT -train FILES -workers 2 -worker-index 0` joins a running
// cluster (README.md). The job is the -config YAML file, changed by -set
// path=value (any key) and the short flags that alias common keys
// (config.Aliases), in command-line order; -h lists every flag. With
// -local it serves the status page on -http (default 127.0.0.1:0, "" off)
// and prints its address. With -events FILE (or - for stdout) it writes the
// job's events as JSON lines (start, progress, end with the summary; see
// job.Events), which the Python package reads.
package main

import (
	"flag"

	"github.com/xdlgo/xps/cmd/worker/internal/worker"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	var f worker.Flags
	f.Bind(flag.CommandLine)
	var overrides config.Overrides
	overrides.Bind(flag.CommandLine)
	cli.ParseCommandLine("worker")
	ctx, stop := cli.SignalContext()
	err := worker.Run(ctx, flag.CommandLine, f, &overrides)
	stop()
	if err != nil {
		cli.Fatal("worker", cli.Cause(ctx, err)) // one line on Ctrl-C
	}
}
