// Command serve serves the newest model of an export store over HTTP/JSON
// and gRPC (see package serve): it loads the newest full export and its deltas,
// applies each new delta as the trainer writes it, and scores requests of
// one user and its candidates.
//
// Usage:
//
//	serve -store DIR|hdfs://HOST:PORT/PATH [flags]
//	serve -store NAME=LOC -store NAME2=LOC2 ... [flags]
//	serve -models FILE [flags]
//
// Flags:
//
//	-store [NAME=]loc the export store (the job's export.store) of a model
//	                  named NAME ("default" when not given); repeated, one
//	                  model each, served side by side (package serve, Set).
//	-models file      the models, from a file (serve.ReadModels) re-read
//	                  every -poll: models added are loaded, removed ones
//	                  drained and dropped. Either -store or -models.
//	-max-model-bytes n  a model's tables' memory bound, a reload counting
//	                  both versions (serve.Options.MaxBytes). Default 0: none.
//	-listen addr      the HTTP/JSON address. Default 127.0.0.1:8500.
//	-grpc addr        the gRPC address (servepb.Predictor). Default
//	                  127.0.0.1:8501; "" turns it off.
//	-poll d           how often to look for new exports. Default 1s.
//	-split-candidates n  a request of at least 2n candidates that finds cores
//	                  idle (fewer requests in flight than cores) is scored in
//	                  blocks of at least n on them at once
//	                  (serve.Options.SplitCandidates). Default 32; -1: never.
//	-max-body-bytes, -max-user-features, -max-candidates, -max-candidate-features,
//	-max-features, -max-in-flight  a request's limits and the requests served
//	                  at once (serve.Limits, whose docs give the defaults).
//	-log-level level  debug, info, warn or error. Default info.
//	-log-format f     text or json. Default text.
//	-http addr        operations endpoint: /metrics, /healthz, /readyz.
//	                  Default off.
//	-tls-ca, -tls-cert, -tls-key  mutual TLS on the gRPC address (README, "TLS").
//
// An example request (?model=NAME names the model among several):
//
//	curl -d '{"user": "1:u42 2:iphone", "candidates": ["3:item7", "3:item9"]}' localhost:8500/predict
//
// SIGINT or SIGTERM stops it gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/xdlgo/xps/cluster/tlsconf"
	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/serve"
)

func main() {
	ctx, stop := cli.SignalContext()
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		cli.Fatal("serve", err)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		stores serve.StoreFlag
		models = fs.String("models", "", "a models file (name and store of each model), re-read every -poll; instead of -store")
		maxMem = fs.Int64("max-model-bytes", 0, "a model's tables' memory bound, a reload counting both versions (0: none)")
		listen = fs.String("listen", "127.0.0.1:8500", "HTTP/JSON address")
		grpcAt = fs.String("grpc", "127.0.0.1:8501", `gRPC address ("" off)`)
		poll   = fs.Duration("poll", time.Second, "how often to look for new exports")
		split  = fs.Int("split-candidates", 32, "a request of at least twice as many candidates that finds cores idle is scored in blocks of at least this many on them at once (-1: never)")
		proc   cli.Proc
		limits serve.Limits
	)
	fs.Var(&stores, "store", "[NAME=]the export store of a model: a directory or hdfs://HOST:PORT/PATH; repeat for several models")
	proc.Bind(fs, "info")
	limits.BindFlags(fs)
	if err := cli.Parse(fs, "serve", args); err != nil {
		return err
	}
	if err := proc.Start(stderr, "serve", ""); err != nil {
		return err
	}
	defer proc.Close()
	log := proc.Log
	if (len(stores) == 0) == (*models == "") {
		fs.Usage()
		return errors.New("give -store (repeated for several models) or -models")
	}
	s, err := serve.NewSet(serve.SetOptions{Models: stores, File: *models,
		Defaults: serve.Options{Poll: *poll, Logger: log, Metrics: proc.Metrics(), Limits: limits, MaxBytes: *maxMem, SplitCandidates: *split}})
	if err != nil {
		return err
	}
	defer s.Close()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	gs := grpc.NewServer(tlsconf.ServerOptions(proc.TLS)...) // mutual TLS with -tls-*
	s.RegisterGRPC(gs)
	if *grpcAt != "" {
		glis, err := net.Listen("tcp", *grpcAt)
		if err != nil {
			return err
		}
		go gs.Serve(glis) //nolint:errcheck // ends with GracefulStop
		log.Info("serve listening (gRPC)", "addr", glis.Addr().String())
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { s.Run(runCtx); close(ran) }()
	defer func() { cancel(); <-ran }() // before s.Close

	proc.ReadyUntil(ctx) // liveness and shutdown; /healthz of -listen says when a model is loaded
	go func() {
		<-ctx.Done()
		gs.GracefulStop()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx) //nolint:errcheck // exiting
	}()
	log.Info("serve listening (HTTP/JSON)", "addr", lis.Addr().String(), "models", stores.String()+*models)
	if err := hs.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
