// Package cli holds what the cmd/ mains share: logger set-up from a level
// flag, signal handling, and endpoint-list parsing. It keeps the mains thin.
package cli
