// Package serve is the prediction server: it follows an export store (a
// directory or hdfs://), serves the newest model the store's chain holds
// (the newest intact full export and the deltas after it) and scores a
// user's candidates over HTTP/JSON (Handler) and gRPC (RegisterGRPC,
// package servepb). It depends on the model (model/ctr), the export format
// and its protocol only: it links neither the trainer, the job lifecycle,
// etcd nor Kafka.
//
// A Server serves one model. A Set serves several side by side, each by
// a Server of its own under its name (Model; SetOptions.File, a models
// file, re-read as it changes): a request names its model, each model
// follows its own store's chain with its own limits, in-flight places,
// memory bound (Options.MaxBytes) and lock, so that a delta or a reload
// of one never pauses another. The serve command always runs a Set.
//
// # Invariants
//
//  1. The Server keeps one copy of the model and applies deltas to it in
//     place: a delta is read into memory first (its rows only) while
//     requests go on, then applied under the replica's write lock, which
//     requests hold for reading: every request is scored by one whole
//     version, never by half an export, and a delta costs memory in
//     proportion to its rows. A new full export is loaded beside the model
//     that serves, whose rows' memory is given back (unmapped) once the
//     requests scoring with it end; a request that finds it released
//     takes the new one.
//  2. An export that cannot be used (missing, half-written, corrupt) is
//     logged once and refused: the server stays on the last good version.
//     An empty store is no error: Predict answers ErrNotReady until an
//     export appears.
//  3. No mix of requests drives the server's memory past a bound: a
//     request's work is bounded by its features (Limits.MaxFeatures; its
//     blocks, parsed at once, may each parse one candidate's limit more
//     before one of them sees the sum over it), and
//     at most Limits.MaxInFlight requests are read and scored at once;
//     beyond, a request is refused at once rather than queued. A
//     request's candidates are split into blocks parsed and scored at
//     once only over cores that no other request in flight needs
//     (Options.SplitCandidates), each candidate's score the same either
//     way.
//  4. With Options.MaxBytes, a new full export is loaded only within what
//     the model serving leaves of it (a reload holds both): its tables,
//     sized by its manifest's rows, are checked before a row is read and
//     after each table; a delta is applied only if its rows fit, each
//     counted as a new one; a refused export leaves the last good version
//     serving.
//  5. A Set drops a model (removed from the models file, or replaced)
//     only after every request that found it has ended: it leaves the
//     Set's map first (new requests find no such model), then its
//     requests in flight are waited for, then its Server is closed, which
//     gives the model's memory back at once (unmapped, as a replaced
//     replica's).
//
// # Usage
//
//	s, err := serve.New(serve.Options{Store: "/tmp/exports"})
//	go s.Run(ctx) // applies new exports every Options.Poll
//	http.Handle("/", s.Handler())
//	defer s.Close()
//
// # Files
//
//   - server.go: Options, Server (New, Run, Update, Version, Close): the chain followed, deltas applied in place, a new model switched in.
//   - set.go: Model, Set (NewSet, Run, Reload, Close, Server, Status): several models by name, the models file (ReadModels), serve's -store flag (StoreFlag).
//   - model.go: the served model (network, parameters, rows), the exports and deltas applied to it, and a request's scorer.
//   - predict.go: Request, Response, Predict and Score, the parsing of a request's features, and the blocks a request is split into over idle cores.
//   - limits.go: Limits, their flags, the in-flight places and the strict decoding of a request.
//   - http.go: Handler, the HTTP/JSON API of a Server and of a Set, and Status.
//   - grpc.go: RegisterGRPC, the gRPC prediction service of a Server and of a Set.
//   - metrics.go: the server's Prometheus metrics: requests, latency, the model served and its memory.
//   - memory.go: Memory, the accounting of the server's memory by part (the model's values and tables, the runtime, the resident set).
package serve
