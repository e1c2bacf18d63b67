//go:build !amd64 || purego

package ams

// haveAdamAVX is false without assembly (other architectures, or the
// purego build tag): Adam.Apply runs its scalar loop only.
var haveAdamAVX = false

// adamBlocks does nothing and returns 0: the caller's scalar loop does all
// the work. See the amd64 version.
func adamBlocks(w, m, v, g []float32, b1, c1, b2, c2, lrT, eps float32) int { return 0 }
