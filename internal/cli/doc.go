// Package cli holds what the cmd/ mains share: logger set-up from a level
// flag, signal handling, endpoint-list parsing, and the operations endpoint
// with its pages (a status page: Proc.ServeStatus). It keeps the mains
// thin.
package cli
