//go:build amd64 && !purego

package prefetch

import "unsafe"

// lines issues PREFETCHT0 for every 64-byte line of [p, p+n). n > 0.
//
//go:noescape
func lines(p unsafe.Pointer, n uintptr)
