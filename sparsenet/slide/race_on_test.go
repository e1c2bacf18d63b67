//go:build race

package slide

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
