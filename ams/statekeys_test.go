package ams

import "testing"

func TestCheckpointKey(t *testing.T) {
	if k := CheckpointKey("worker-3"); k != "reader/worker-3/checkpoint" || !IsCheckpointKey(k) {
		t.Fatalf("CheckpointKey = %q (IsCheckpointKey %v)", k, IsCheckpointKey(k))
	}
	for _, k := range []string{"reader//checkpoint", "reader/a/b/checkpoint", "reader/kafka://t/0", "xc/checkpoint", "reader/w"} {
		if IsCheckpointKey(k) {
			t.Errorf("IsCheckpointKey(%q) = true", k)
		}
	}
}
