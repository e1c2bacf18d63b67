package testutil

import "testing"

// TestFreeAddrNeverRepeats: the addresses a test names before it starts
// any server are all different, however many it asks for.
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 300 {
		a := FreeAddr(t)
		if seen[a] {
			t.Fatalf("FreeAddr handed out %s twice", a)
		}
		seen[a] = true
	}
}
