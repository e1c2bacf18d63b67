//go:build !amd64 || purego

package optim

// haveOptAVX is false without assembly (other architectures, or the
// purego build tag): Adam.Apply and Adagrad.Apply run their scalar loops
// only.
var haveOptAVX = false

// adamBlocks does nothing and returns 0: the caller's scalar loop does all
// the work. See the amd64 version.
func adamBlocks(w, m, v, g []float32, b1, c1, b2, c2, lrT, eps float32) int { return 0 }

// adagradBlocks does nothing and returns 0, as adamBlocks.
func adagradBlocks(w, acc, g []float32, lr, eps float32) int { return 0 }
