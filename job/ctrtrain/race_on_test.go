//go:build race

package ctrtrain

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
