// Package checkpoint is the one record of how far a worker's job got,
// kept in the model (an AMS state entry, ams.CheckpointKey) so that it is
// snapshotted atomically with the rows and rolled back with them. Every
// job (the CTR trainer, the SLIDE job) writes the same type; the worker
// reads it when it resumes, and the scheduler sums its Applied counts for
// snapshots every N samples.
//
// # Invariants
//
//  1. A worker stores its checkpoint only after the pushes of every sample
//     it counts are applied, so a snapshot never holds a checkpoint ahead
//     of its rows.
//  2. Applied and Digest count the samples applied over the whole job,
//     across restarts: a resumed job adds to the checkpoint it resumed.
//  3. Batches numbers the worker's pushes (ams.Origin): the shards'
//     records of applied pushes hold exactly batches 0 to Batches-1 of
//     the worker wherever the checkpoint is consistent with the rows
//     (Consistent, for a snapshot; Verify, live).
//  4. Files name state the worker keeps itself (the SLIDE layer), written
//     into the snapshot before the checkpoint that names it; a checkpoint
//     stored between snapshots (progress) names no files, so a job finding
//     one without the files it needs cannot resume from it and says so.
//
// # Files
//
//   - checkpoint.go: Checkpoint with Best and File, Store, Load and Decode, the Applied counts, Consistent and Verify.
package checkpoint
