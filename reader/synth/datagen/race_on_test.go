//go:build race

package datagen

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = true
