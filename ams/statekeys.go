package ams

import (
	"strconv"
	"strings"
)

// The model-state keys: every AMS state entry (shard.PutState) that a
// process of the cluster writes, in one list. State entries live on the
// shard that hashes their key (StateShard) and go into every snapshot with
// the rows, so a restore rolls them back together with the model.
//
//	key                          written by                          read by
//	job/config                   the job's first worker (Declare)    ams/client.WriteSnapshot (the manifest's
//	                                                                 config), workers joining the job
//	job/shape                    the job's first worker (Declare)    ams/client.WriteExport (the export's shape)
//	sync/rounds                  every shard, its own (sync mode)    that shard, after a restore
//	reader/<worker>/checkpoint   worker <worker>: its Checkpoint     the worker, resuming; the scheduler
//	                             (job/checkpoint)                    (samples applied, -snapshot-every-samples)
//	reader/kafka://<topic>/<p>   the worker reading partition p      the next worker to read partition p
//	applied/<index>              shard <index> of the map, into its  that shard (or every shard, onto another
//	                             snapshot part (not PutState): its   layout) restoring the snapshot
//	                             Applied records, JSON by worker
const (
	// StateJobConfig holds the job's configuration (JSON of
	// config.Config, defaults filled).
	StateJobConfig = "job/config"
	// StateJobShape holds the network's input shape as the workers found
	// it in the data (JSON of the worker's Shape): a model export keeps it
	// with the configuration, which may leave the fields to the data.
	StateJobShape = "job/shape"
	// StateSyncRounds holds a shard's sync-mode progress; every shard has
	// its own entry, kept by every shard on a restore.
	StateSyncRounds = "sync/rounds"
	// StateReaderPrefix prefixes every reader's entries: worker checkpoints
	// and stream positions.
	StateReaderPrefix = "reader/"
	// StateAppliedPrefix prefixes the shards' records of applied pushes
	// in a snapshot (AppliedKey).
	StateAppliedPrefix = "applied/"
)

// AppliedKey returns the snapshot state key of the Applied records of the
// shard at index of the map, "applied/<index>".
func AppliedKey(index int) string { return StateAppliedPrefix + strconv.Itoa(index) }

// checkpointSuffix ends the key of a worker's checkpoint.
const checkpointSuffix = "/checkpoint"

// CheckpointKey returns the key of worker's checkpoint,
// "reader/<worker>/checkpoint".
func CheckpointKey(worker string) string { return StateReaderPrefix + worker + checkpointSuffix }

// IsCheckpointKey reports whether key is a worker's checkpoint.
func IsCheckpointKey(key string) bool {
	_, ok := CheckpointWorker(key)
	return ok
}

// CheckpointWorker returns the worker whose checkpoint key is, and whether
// key is a checkpoint's key.
func CheckpointWorker(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, StateReaderPrefix)
	worker, ok2 := strings.CutSuffix(rest, checkpointSuffix)
	if !ok || !ok2 || worker == "" || strings.Contains(worker, "/") {
		return "", false
	}
	return worker, true
}

// StreamPositionKey returns the key of a stream's position,
// "reader/<stream>" (stream: kafka://<topic>/<partition>).
func StreamPositionKey(stream string) string { return StateReaderPrefix + stream }
