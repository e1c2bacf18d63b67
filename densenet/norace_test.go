//go:build !race

package densenet

const raceEnabled = false
