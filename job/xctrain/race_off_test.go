//go:build !race

package xctrain

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
