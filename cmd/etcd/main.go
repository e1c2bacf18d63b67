// Command etcd runs a single-member etcd server (the one `worker -local`
// embeds) as its own process, for running the cluster's processes
// separately on a machine without an etcd installation.
//
// Usage:
//
//	etcd [-addr 127.0.0.1:2379] [-dir DIR]
//
// Flags:
//
//	-addr        client address (default "127.0.0.1:2379")
//	-dir         data directory (default: a new temporary directory, removed on exit)
//	-log-level   debug, info, warn or error (default warn)
//
// It prints "etcd serving on ADDR" once ready and stops on SIGINT/SIGTERM.
// A production cluster should run a real etcd cluster instead.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/internal/etcdembed"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:2379", "client address")
	dir := flag.String("dir", "", "data directory (default: a temporary directory removed on exit)")
	level := flag.String("log-level", "warn", "log level: debug, info, warn, error")
	flag.Parse()
	if err := run(*addr, *dir, *level); err != nil {
		cli.Fatal("etcd", err)
	}
}

func run(addr, dir, level string) error {
	log, err := cli.Logger(level)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "xps-etcd-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: dir, ClientAddr: addr, Logger: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Printf("etcd serving on %s (data in %s)\n", srv.Endpoints()[0], dir)
	<-ctx.Done()
	return nil
}
