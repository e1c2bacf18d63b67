//go:build !amd64 || purego

package densenet

// defaultKernel is the micro-kernel Gemm uses: without assembly (other
// architectures, or the purego build tag) it is the pure-Go one.
var defaultKernel = genericKernel

// gemmKernels lists every micro-kernel this build can run on this CPU;
// the tests check each against the reference loop.
var gemmKernels = []*gemmKernel{genericKernel}
