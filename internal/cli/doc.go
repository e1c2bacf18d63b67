// Package cli holds what the cmd/ mains share: flag parsing (Parse,
// ParseCommandLine: -h prints every flag, a bad command line one line and
// a hint, status 2), logger set-up from a level flag, signal handling,
// endpoint-list parsing, the report of a fatal error (Fatal), and the
// operations endpoint with its pages (a status page: Proc.ServeStatus).
// It keeps the mains thin.
package cli
