//go:build race

package xcgen

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
