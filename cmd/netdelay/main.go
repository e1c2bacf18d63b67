// Command netdelay relays TCP connections with a fixed delay each way
// (package cmd/netdelay/internal/netdelay), for link benchmarks where the
// kernel has no netem qdisc (bench/dslide_net.sh).
//
// Usage:
//
//	netdelay -delay 10ms LISTEN=TARGET [LISTEN=TARGET...]
//
// Flags:
//
//	-delay   the delay added to every byte, each way (default 10ms)
//	-report  print the bytes relayed so far (all pairs, both ways) this
//	         often; 0: never (default 0s)
//
// Each LISTEN=TARGET pair listens on LISTEN and relays every connection to
// TARGET. SIGINT or SIGTERM stops it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/xdlgo/xps/cmd/netdelay/internal/netdelay"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	delay := flag.Duration("delay", 10*time.Millisecond, "the delay added to every byte, each way")
	report := flag.Duration("report", 0, "print the bytes relayed so far (all pairs, both ways) this often; 0: never")
	flag.Usage = cli.Usage(flag.CommandLine, "netdelay", "LISTEN=TARGET...")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		cli.Fatal("netdelay", errors.New("give at least one LISTEN=TARGET"))
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	errs := make(chan error, flag.NArg())
	var relays []*netdelay.Relay
	for _, a := range flag.Args() {
		listen, target, ok := strings.Cut(a, "=")
		if !ok {
			cli.Fatal("netdelay", fmt.Errorf("%q is not LISTEN=TARGET", a))
		}
		lis, err := net.Listen("tcp", listen)
		if err != nil {
			cli.Fatal("netdelay", err)
		}
		r := &netdelay.Relay{Target: target, Delay: *delay}
		relays = append(relays, r)
		go func() { errs <- r.Serve(lis) }()
		fmt.Printf("netdelay: %s -> %s, %v each way\n", lis.Addr(), target, *delay)
	}
	var tick <-chan time.Time
	if *report > 0 {
		t := time.NewTicker(*report)
		defer t.Stop()
		tick = t.C
	}
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-errs:
			break loop
		case <-tick:
			var b int64
			for _, r := range relays {
				b += r.Bytes()
			}
			fmt.Printf("netdelay: %d bytes relayed\n", b)
		}
	}
	for _, r := range relays {
		r.Close()
	}
	if err != nil {
		cli.Fatal("netdelay", err)
	}
}
