// Package e2e holds the multi-process tests: it builds the real binaries
// (every command under cmd/, once for the package), starts an embedded etcd
// in the test process, and runs shards, scheduler and workers as separate OS
// processes talking gRPC and etcd over loopback. Under the race detector
// the package skips itself (TestMain): its processes are not instrumented.
// It finds the module's root by `go env GOMOD` (moduleRoot), not by a
// relative path.
//
// # Files
//
//   - main_test.go: TestMain: the commands' build directory, -race skip.
//   - e2e_test.go: building and starting the commands (build, start, proc); a file job and an HDFS job over processes.
//   - cmdline_test.go: every command's -h and its defaults against README's table; SIGINT while training and waiting.
//   - fault_test.go: shards, workers and the scheduler killed mid-job.
//   - kafka_fault_test.go: the same over a Kafka stream.
//   - netcut_test.go: a network namespace whose link a test cuts.
//   - orderly_test.go: a finished job and an orderly stop are no failure.
//   - firsthour_test.go: what the binaries say to a new user's mistakes.
//   - tls_test.go: a whole cluster under mutual TLS.
//   - slide_test.go: the SLIDE layer's shares survive a worker's kill.
//   - prometheus_test.go: a real Prometheus scrapes a cluster.
//   - statuspage_test.go: the status page rendered by headless Chromium.
//   - readme_test.go: README's command blocks, run as written.
//   - walkthrough_test.go: README's walkthrough, run as written.
//   - recovery_bench_test.go: TestRecoveryTime (bench/recovery.sh).
//   - race_on_test.go: raceEnabled true, under the race detector.
//   - race_off_test.go: raceEnabled false, without it.
package e2e
