// Package etcdembed runs an etcd server inside the process, on loopback with
// ports chosen by the kernel. `worker -local` uses it to run a whole cluster
// in one process, and tests use it as a real etcd.
//
// Usage:
//
//	srv, err := etcdembed.Start(ctx, etcdembed.Options{Dir: dir})
//	if err != nil { ... }
//	defer srv.Close()
//	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints()})
//
// Invariants: a Server holds no process globals, so several may run in one
// process; Start returns only once the server serves client requests (or
// fails, leaving nothing running); Close stops the server and waits for all
// its goroutines.
//
// # Files
//
//   - etcdembed.go: Options (EnsureDefaults, Validate), Start and Server (Endpoints, Close), and the log handler that falls silent once Close begins.
package etcdembed
