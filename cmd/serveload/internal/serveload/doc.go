// Package serveload is the load generator of the serving benchmark
// (bench/serve.sh): it builds prediction requests from a test file, one
// user and its candidates each, and sends them to a server over HTTP with
// a bounded number of requests in flight, measuring each request's
// latency.
//
// It is cmd/serveload's library (only that command imports it).
//
// # Files
//
//   - serveload.go: LoadRequests (requests from a test file), Options, Run and its Result (requests/s, latency percentiles).
//   - fresh.go: FreshOptions, Freshness: how long samples written into the training topic take to show in the server's answers.
package serveload
