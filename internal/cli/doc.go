// Package cli holds what the cmd/ mains share: flag parsing (Parse,
// ParseCommandLine: -h prints every flag, a bad command line one line and
// a hint, status 2), logger set-up from a level flag, signal handling,
// endpoint-list parsing, the report of a fatal error (Fatal), and the
// operations endpoint with its pages (a status page: Proc.ServeStatus).
// It keeps the mains thin.
//
// # Files
//
//   - cli.go: the logger, SignalContext and Signal, Cause, Fatal and Report, the profiles and Proc, a process's operations endpoint and readiness.
//   - flags.go: Parse and ParseCommandLine, Usage and Hint: flags with defaults noted and stray arguments refused.
//   - logversion.go: Proc.SetVersion, the cluster version added to every log record.
//   - status.go: Proc.DefaultHTTP and Proc.ServeStatus, the status page on the operations endpoint.
package cli
