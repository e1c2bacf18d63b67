// Package pullbench measures the AMS pull path against raw TCP between two
// processes (issue 8): a server process holds one AMS shard (real gRPC
// server, a table of Rows resident rows of Dim float32) and a raw TCP
// responder; a client process pulls IDs random rows from the shard, one
// request at a time or with several in flight on the client's one HTTP/2
// connection, and asks the TCP responder for the same bytes over one TCP
// connection (same request and reply sizes, the same number in flight,
// pipelined). Both report reply payload bytes per second.
//
// The TCP protocol is this package's own: a request is a 16-byte header
// (request length, reply length, both uint64 little-endian) and the request
// bytes; the reply is the reply length of bytes. Replies come in request
// order.
//
// Invariants: every goroutine a Server starts stops in Close; Run ends when
// its duration has passed and every request it sent has been answered.
//
// It is cmd/pullbench's library (only that command imports it).
//
// # Files
//
//   - pullbench.go: the server side (ServerOptions, Start, Server) and the client side (RunOptions, RunAMS, RunTCP, Result).
package pullbench
