// Command serveload is the serving benchmark's load generator (see
// cmd/serveload/internal/serveload and bench/serve.sh): it builds requests
// of one user and -candidates candidates from a test file, sends them to a
// serve process with -in-flight requests in flight for -duration, and prints
// one JSON line: requests/s and latency percentiles (over HTTP to -url, or
// over gRPC to -grpc ADDR). With -dump it writes
// the requests, one JSON object per line, for the reference peer to score.
// With -flood N, N hostile clients send huge requests meanwhile (issue 48's
// probe). With -brokers it measures freshness instead (serveload.Freshness):
// it writes -trials bursts of -burst probe samples into -topic and times how
// long each takes to show in the server's scores.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/xdlgo/xps/cmd/serveload/internal/serveload"
	"github.com/xdlgo/xps/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext()
	err := run(ctx)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		cli.Fatal("serveload", err)
	}
}

func run(ctx context.Context) error {
	var (
		url      = flag.String("url", "http://127.0.0.1:8500/predict", "the server's predict URL")
		grpcAt   = flag.String("grpc", "", "send over gRPC to this address (xps.serve.v1.Predictor) instead of -url")
		test     = flag.String("test", "", "test file (sample-group or libFFM) to build requests from (required)")
		k        = flag.Int("candidates", 150, "candidates per request")
		n        = flag.Int("requests", 1000, "distinct requests (sent in turn)")
		inFlight = flag.Int("in-flight", 2, "requests in flight")
		duration = flag.Duration("duration", 20*time.Second, "how long to send")
		dump     = flag.String("dump", "", "write the requests here (JSON lines) and exit")
		brokers  = flag.String("brokers", "", "measure freshness: the training topic's brokers")
		floodN   = flag.Int("flood", 0, "hostile clients sending, meanwhile, requests of one user with -flood-user-features features (their answers by status in the result)")
		floodF   = flag.Int("flood-user-features", 300000, "user features of a flood request")
		fresh    serveload.FreshOptions
	)
	flag.StringVar(&fresh.Topic, "topic", "ctr", "freshness: the training topic")
	flag.IntVar(&fresh.Burst, "burst", 2000, "freshness: probe samples per trial")
	flag.IntVar(&fresh.Trials, "trials", 20, "freshness: trials")
	flag.StringVar(&fresh.Template, "template", "", "freshness: the other features of a probe sample (libFFM)")
	cli.ParseCommandLine("serveload")
	if *brokers != "" {
		fresh.URL, fresh.Brokers, fresh.Dir = *url, cli.SplitList(*brokers), os.TempDir()
		fresh.Field, fresh.Timeout, fresh.Threshold = 0, 30*time.Second, 0.02
		return printJSON(serveload.Freshness(ctx, fresh))
	}
	if *test == "" {
		flag.Usage()
		return errors.New("-test is required")
	}
	reqs, err := serveload.LoadRequests(*test, *n, *k)
	if err != nil {
		return err
	}
	if *dump != "" {
		f, err := os.Create(*dump)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(f)
		for _, r := range reqs {
			if err := enc.Encode(r); err != nil {
				f.Close()
				return err
			}
		}
		return f.Close()
	}
	return printJSON(serveload.Run(ctx, serveload.Options{URL: *url, GRPC: *grpcAt, Requests: reqs, InFlight: *inFlight, Duration: *duration,
		Flood: *floodN, FloodUserFeatures: *floodF}))
}

// printJSON prints v as one JSON line, unless err.
func printJSON(v any, err error) error {
	if err != nil {
		return err
	}
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
	return nil
}
