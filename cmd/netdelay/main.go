// Command netdelay relays TCP connections with a fixed delay each way
// (package internal/netdelay), for link benchmarks where the kernel has no
// netem: netdelay -delay 10ms LISTEN=TARGET [LISTEN=TARGET...].
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/internal/netdelay"
)

func main() {
	delay := flag.Duration("delay", 0, "delay added to every byte, each way")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "Usage: netdelay -delay D LISTEN=TARGET [LISTEN=TARGET...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	errs := make(chan error, flag.NArg())
	var relays []*netdelay.Relay
	for _, a := range flag.Args() {
		listen, target, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "netdelay: %q is not LISTEN=TARGET\n", a)
			os.Exit(2)
		}
		lis, err := net.Listen("tcp", listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "netdelay: %v\n", err)
			os.Exit(1)
		}
		r := &netdelay.Relay{Target: target, Delay: *delay}
		relays = append(relays, r)
		go func() { errs <- r.Serve(lis) }()
		fmt.Printf("netdelay: %s -> %s, %v each way\n", lis.Addr(), target, *delay)
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		fmt.Fprintf(os.Stderr, "netdelay: %v\n", err)
	}
	for _, r := range relays {
		r.Close()
	}
}
