// Package netdelay is a TCP relay that delays every byte by a fixed time
// in each direction, for link benchmarks on machines whose kernel has no
// netem qdisc (tc's delay): the bandwidth is shaped by the kernel (tc
// tbf on the benchmark's veth pairs), the delay here. Bytes are forwarded
// in the order read, each chunk released Delay after it was read, so a
// stream keeps its throughput and gains Delay of latency.
//
// # Invariants
//
//  1. Every byte read from one side is written to the other, in order;
//     a side's EOF or error closes the other's write half (then both).
//  2. No chunk is written before Delay has passed since it was read.
//  3. Close stops accepting and ends every relayed connection; Serve
//     returns once they are done.
//
// It is cmd/netdelay's library (only that command imports it).
//
// # Files
//
//   - netdelay.go: Relay: Serve, Bytes, Close.
package netdelay
