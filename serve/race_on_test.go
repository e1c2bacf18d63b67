//go:build race

package serve_test

// raceEnabled reports whether the tests run under the race detector,
// whose sync.Pool drops items on purpose (so a warm request may
// allocate) and whose training runs are many times slower.
const raceEnabled = true
