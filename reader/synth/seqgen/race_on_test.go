//go:build race

package seqgen

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
