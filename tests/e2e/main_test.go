package e2e

import (
	"fmt"
	"os"
	"testing"
)

// TestMain skips the package under the race detector. Every test here
// drives processes built without it (build, go build), so the detector
// would watch only the harness and the embedded etcd (whose package's own
// tests run under it), at about five minutes of the test command's race
// pass; the default build's run is the test.
func TestMain(m *testing.M) {
	if raceEnabled {
		fmt.Println("tests/e2e: skipped under -race: the processes under test are built without the detector; the default build's run is the test")
		os.Exit(0)
	}
	code := m.Run()
	if binDir != "" && os.Getenv("XPS_E2E_BIN") == "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
