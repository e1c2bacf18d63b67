// Command hdfsd runs the loopback HDFS test server of tests/hdfstest as a
// process of its own. It is not Hadoop: it is an in-memory namenode and
// datanode that speak HDFS's wire protocols (Hadoop RPC with simple
// authentication, DataTransferProtocol 28), for tests and local tools that
// need an HDFS endpoint where no Hadoop can be installed. Nothing is
// persisted.
//
// Usage:
//
//	hdfsd [-addr 127.0.0.1:9000] [-datanode-addr 127.0.0.1:0] [-block-size 1048576] [-list-limit 1000] [-v]
//
// Once both listeners are up it prints one line to standard output,
//
//	hdfsd: namenode 127.0.0.1:9000 datanode 127.0.0.1:NNNN
//
// and serves until SIGINT or SIGTERM, when it closes every connection and
// exits with status 0.
package main
