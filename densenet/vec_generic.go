//go:build !amd64 || purego

package densenet

// Without assembly the element-wise kernels do nothing and the callers'
// Go loops do all the work (see vec_amd64.go).

// haveVec is false: there are no kernels to run.
var haveVec = false

func vecPReLUAdd(act, z, x, y, alpha []float32) int         { return 0 }
func vecPReLUBack(g, z, alpha, galpha []float32) int        { return 0 }
func vecAxpy(dst []float32, alpha float32, x []float32) int { return 0 }
func vecTanh(x []float32) int                               { return 0 }
func vecBiasReLU(dst, x, bias []float32) int                { return 0 }
func vecReLUBack(dst, grad, act []float32) int              { return 0 }
func vecColSums(dst, src []float32) int                     { return 0 }

func vecGRUBack(c, dht, hp, gates, dg, dp []float32, a float32) (int, float32) { return 0, 0 }
func vecGRUGates(gates, gh, gi, bin, bhn []float32) int                        { return 0 }
func vecGRUState(h, hp, z, nn []float32, a float32) int                        { return 0 }
