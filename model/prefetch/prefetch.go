package prefetch

import "unsafe"

// LineSize is the cache line size the hints are issued at.
const LineSize = 64

// Float32s hints that s will be read soon: every line it touches.
func Float32s(s []float32) {
	if len(s) > 0 {
		lines(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*4)
	}
}

// Float32 hints that *p will be read soon (one line).
func Float32(p *float32) { lines(unsafe.Pointer(p), 1) }

// Uint32 hints that *p will be read soon (one line).
func Uint32(p *uint32) { lines(unsafe.Pointer(p), 1) }

// Bytes hints that b will be read soon: every line it touches.
func Bytes(b []byte) {
	if len(b) > 0 {
		lines(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
	}
}

// Of hints that *p will be read soon: every line of the value.
func Of[T any](p *T) { lines(unsafe.Pointer(p), unsafe.Sizeof(*p)) }

// Int32s hints that s will be read soon: every line it touches.
func Int32s(s []int32) {
	if len(s) > 0 {
		lines(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*4)
	}
}
