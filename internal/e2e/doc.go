// Package e2e holds the multi-process tests: it builds the real binaries
// (cmd/ams, cmd/scheduler, cmd/worker, cmd/ctrgen), starts an embedded etcd
// in the test process, and runs shards, scheduler and workers as separate OS
// processes talking gRPC and etcd over loopback. Under the race detector
// the package skips itself (TestMain): its processes are not instrumented.
package e2e
