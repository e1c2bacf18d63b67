// Command pullbench measures the AMS pull path against raw TCP between two
// processes (see cmd/pullbench/internal/pullbench). Start the server side,
// then the client side with the addresses it prints:
//
//	pullbench -serve [-rows 1048576] [-dim 16] [-ams-addr A] [-tcp-addr T]
//	pullbench -ams A -tcp T [-rows N] [-dim 16] [-ids 50000] [-inflight 1,4] [-seconds 5]
//
// The client prints one JSON line per path and in-flight count, then the
// ratio of the AMS pull's bytes/s to raw TCP's.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xdlgo/xps/cmd/pullbench/internal/pullbench"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	serve := flag.Bool("serve", false, "run the server side (a shard and a TCP responder) until SIGINT/SIGTERM")
	amsAddr := flag.String("ams-addr", "127.0.0.1:0", "with -serve: the shard's listen address")
	tcpAddr := flag.String("tcp-addr", "127.0.0.1:0", "with -serve: the TCP responder's listen address")
	rows := flag.Int("rows", 1<<20, "resident rows in the shard's table (client: the same value)")
	dim := flag.Int("dim", 16, "row width in float32 (client: the same value)")
	amsTo := flag.String("ams", "", "client: the server's shard address")
	tcpTo := flag.String("tcp", "", "client: the server's TCP responder address")
	ids := flag.Int("ids", 50000, "client: rows per pull")
	inflight := flag.String("inflight", "1,4", "client: requests in flight, comma-separated list of counts")
	seconds := flag.Float64("seconds", 5, "client: seconds per measurement")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to `file`")
	cli.ParseCommandLine("pullbench")
	if *cpuprofile != "" {
		stopProfile, err := cli.StartCPUProfile(*cpuprofile)
		if err != nil {
			cli.Fatal("pullbench", err)
		}
		defer stopProfile()
	}
	if err := run(*serve, *amsAddr, *tcpAddr, *rows, *dim, *amsTo, *tcpTo, *ids, *inflight, *seconds); err != nil {
		cli.Fatal("pullbench", err)
	}
}

func run(serve bool, amsAddr, tcpAddr string, rows, dim int, amsTo, tcpTo string, ids int, inflight string, seconds float64) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if serve {
		srv, err := pullbench.Start(pullbench.ServerOptions{AMSAddr: amsAddr, TCPAddr: tcpAddr, Rows: rows, Dim: dim})
		if err != nil {
			return err
		}
		fmt.Printf("pullbench: ams %s tcp %s\n", srv.AMSAddr(), srv.TCPAddr())
		<-ctx.Done()
		return srv.Close()
	}
	if amsTo == "" || tcpTo == "" {
		return fmt.Errorf("the client needs -ams and -tcp (see -help)")
	}
	enc := json.NewEncoder(os.Stdout)
	for _, s := range strings.Split(inflight, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-inflight: bad count %q", s)
		}
		o := pullbench.RunOptions{AMSAddr: amsTo, TCPAddr: tcpTo, Rows: rows, Dim: dim, IDs: ids, InFlight: n,
			Duration: time.Duration(seconds * float64(time.Second))}
		a, err := pullbench.RunAMS(ctx, o)
		if err != nil {
			return err
		}
		t, err := pullbench.RunTCP(ctx, o)
		if err != nil {
			return err
		}
		enc.Encode(a)
		enc.Encode(t)
		fmt.Printf("in flight %d: ams %.0f MB/s, tcp %.0f MB/s, ams/tcp %.3f\n", n, a.BytesPerS/1e6, t.BytesPerS/1e6, a.BytesPerS/t.BytesPerS)
	}
	return nil
}
