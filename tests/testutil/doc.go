// Package testutil holds helpers shared by the tests of several packages:
// a test context, polling with a deadline (instead of sleeps), an etcd
// server and client for tests, and free loopback addresses for servers a
// test must name before they start. It is imported by _test.go files only
// (tests/archtest holds every package outside tests/ to that).
//
// # Files
//
//   - testutil.go: Ctx, Eventually, StartEtcd, EtcdClient, SharedEtcd (one etcd for a whole test binary, a key prefix per test), Conn, FreeAddr, Buffer (a concurrency-safe log sink).
//   - hdfs.go: HDFS (the HDFS test server and a file system on it) and PutHDFS.
//   - snapshots.go: SnapshotNames: whether a complete snapshot holds workers' checkpoints naming every one of some files.
package testutil
