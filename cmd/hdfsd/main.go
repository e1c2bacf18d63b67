package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/tests/hdfstest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		cli.Fatal("hdfsd", err)
	}
}

// run parses args, serves until ctx is done, and shuts the server down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hdfsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9000",
		"namenode listen `address`: what clients are given (hdfs.ClientOptions.Addresses); port 0 picks a free port")
	dnAddr := fs.String("datanode-addr", "127.0.0.1:0",
		"datanode data-transfer listen `address`; the namenode advertises its port in block locations")
	blockSize := fs.Int64("block-size", hdfstest.DefaultBlockSize,
		"block size in `bytes` advertised by getServerDefaults; a positive multiple of 512")
	listLimit := fs.Int("list-limit", 1000, "most directory `entries` in one getListing reply (dfs.ls.limit)")
	verbose := fs.Bool("v", false, "log failed connections and protocol errors to standard error")
	if err := cli.Parse(fs, "hdfsd", args); err != nil {
		return err
	}

	opts := hdfstest.Options{Addr: *addr, DatanodeAddr: *dnAddr, BlockSize: *blockSize, ListingLimit: *listLimit}
	if *verbose {
		opts.Logf = log.New(stderr, "", log.LstdFlags).Printf
	}
	srv, err := hdfstest.Start(opts)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "hdfsd: namenode %s datanode %s\n", srv.NamenodeAddr(), srv.DatanodeAddr()); err != nil {
		srv.Close()
		return fmt.Errorf("print addresses: %w", err)
	}
	<-ctx.Done()
	return srv.Close()
}
