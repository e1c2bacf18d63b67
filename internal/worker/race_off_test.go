//go:build !race

package worker

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
