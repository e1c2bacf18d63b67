package dslide

// Bytes of one training step of n samples with labels label ids in all
// and din hidden activations per sample, between the batch's worker (an
// owner itself) and the other owners, as a transport sends them: values
// as float32, counts and ids as int32, the Partial as float32 + float64 +
// int32 + float64 and the Global as float32 + float64 + int32. Framing is
// not counted (the same for both ways).
const (
	partialBytes = 4 + 8 + 4 + 8
	globalBytes  = 4 + 8 + 4
)

// StepBytes returns the bytes a D-SLIDE step moves (steps 1 to 4 of the
// package documentation) on p with the batch's worker owning share local:
// to each other owner x and the labels, back its Partials, to it the
// Globals, back its part of dx.
func StepBytes(p Partition, local, n, din, labels int) int64 {
	var b int64
	for o := 0; o < p.Owners(); o++ {
		if o == local {
			continue
		}
		b += inputBytes(n, din, labels) + int64(n)*(partialBytes+globalBytes) + 4*int64(n)*int64(din)
	}
	return b
}

// DenseStepBytes returns the bytes of the same step under dense model
// parallelism: to each other owner x and the labels, back every one of
// its rows' logits for every sample (n x its rows) and its part of the
// hidden gradient (n x din). (The logits' gradients the owners need for
// their weights would add as much again as the logits; they are not
// counted.)
func DenseStepBytes(p Partition, local, n, din, labels int) int64 {
	var b int64
	for o := 0; o < p.Owners(); o++ {
		if o == local {
			continue
		}
		b += inputBytes(n, din, labels) + 4*int64(n)*int64(p.Rows(o)) + 4*int64(n)*int64(din)
	}
	return b
}

// inputBytes is one owner's copy of the batch: x, the labels and their
// counts.
func inputBytes(n, din, labels int) int64 {
	return 4*int64(n)*int64(din) + 4*int64(labels) + 4*int64(n)
}
