package controlplane

import (
	"fmt"
	"strconv"

	"github.com/xdlgo/xps/cluster/membership"
)

// Every etcd key of a cluster, under its prefix P ("/xps/<cluster>"), with
// the process that writes it and those that read it. No other package
// builds a key; a new protocol adds its keys here.
//
//	key                              written by                       read by
//	P/members/<kind>/<id>            every process, under its lease   scheduler (watch: joins, expiries),
//	                                 (membership.Register)            WaitPauseAcks (is a worker alive),
//	                                                                  status pages (MemberStatuses)
//	P/left/<kind>/<id>               a process leaving cleanly        scheduler (a leave, not an expiry),
//	                                 (membership.Registration.Close)  a SLIDE job's workers (WorkersLeft)
//	P/shardmap                       leading scheduler                workers, embedded cluster, a new
//	                                 (PublishShardMap)                leader (adoption), WaitShardMap*
//	P/events/<seq>                   leading scheduler (PutEvent)     operators and tests (ListEvents)
//	P/state                          leading scheduler                a new leader (adoption), a
//	                                 (PutClusterState)                standby's status page
//	P/job                            the first leading scheduler      every later leader (ClaimJob): the
//	                                 of a job (ClaimJob)              job's id, which its snapshots carry
//	P/leader/<lease>                 every scheduler, under its lease schedulers (Elect), status pages
//	                                                                  (Leader)
//	P/snapshot/pause                 leading scheduler (PutPause)     workers (Pauser)
//	P/snapshot/paused/<worker>       worker (AckPause)                leading scheduler (WaitPauseAcks)
//	P/snapshot/resume                leading scheduler (PutResume,    workers (WaitResume, WaitRestored)
//	                                 PutFailed)
//	P/snapshot/target                leading scheduler                workers that keep model state of
//	                                 (PutSnapshotTarget)              their own (GetSnapshotTarget)
//	P/snapshot/request               anyone (RequestSnapshot)         leading scheduler (watch)
//	P/snapshot/last                  leading scheduler                RequestSnapshot, workers
//	                                 (PutSnapshotResult)              (WatchSnapshotResults), status
//	                                                                  pages (WatchStatus)
//	P/rollback/request               a worker (RequestRollback)       leading scheduler (watch)
//	P/rollback/last                  leading scheduler                RequestRollback, workers
//	                                 (PutRollbackResult)              (LastRollback)
//	P/export/request                 anyone (RequestExport)           leading scheduler (watch)
//	P/export/last                    leading scheduler                RequestExport, status pages
//	                                 (PutExportResult)                (WatchStatus)
//	P/assign/<worker>                leading scheduler                worker (WaitAssignment)
//	                                 (PutAssignment)
//	P/partitions                     leading scheduler                workers (WaitPartitionAssignment,
//	                                 (PutPartitionAssignmentIf)       WatchReassigned), scheduler
//	P/partitions-ack/<worker>        worker (AckPartitions)           leading scheduler (WaitPartitionAcks)
//	P/partitions-done/<worker>       worker (MarkPartitionsDone)      leading scheduler (PartitionsDone,
//	                                                                  PutPartitionAssignmentIf)
//	P/barriers/<kind>.<id>/<name>    a member at the barrier, under   the members at the barrier (Barrier)
//	                                 its lease
//	P/progress/<worker>              worker, under its lease          schedulers' status pages
//	                                 (PutProgress)                    (WatchStatus)
//	P/dslide/owner/<index>           a SLIDE job's worker, under its  the job's workers (WaitOwnerAddrs)
//	                                 lease (PutOwnerAddr)

// MembersPrefix returns "P/members/" (package membership owns the family).
func MembersPrefix(prefix string) string { return membership.MembersPrefix(prefix) }

// MemberKey returns "P/members/<kind>/<id>".
func MemberKey(prefix, kind, id string) string { return membership.MemberKey(prefix, kind, id) }

// LeftPrefix returns "P/left/".
func LeftPrefix(prefix string) string { return membership.LeftPrefix(prefix) }

// LeftKey returns "P/left/<kind>/<id>".
func LeftKey(prefix, kind, id string) string { return membership.LeftKey(prefix, kind, id) }

// ShardMapKey returns "P/shardmap".
func ShardMapKey(prefix string) string { return prefix + "/shardmap" }

// EventsPrefix returns "P/events/".
func EventsPrefix(prefix string) string { return prefix + "/events/" }

// EventKey returns "P/events/<seq as 20 zero-padded digits>", so that
// keys sort in the order they were written.
func EventKey(prefix string, seq uint64) string {
	return fmt.Sprintf("%s%020d", EventsPrefix(prefix), seq)
}

// StateKey returns "P/state".
func StateKey(prefix string) string { return prefix + "/state" }

// JobKey returns "P/job": the id of the job the cluster runs.
func JobKey(prefix string) string { return prefix + "/job" }

// LeaderKey returns "P/leader", the election prefix of the schedulers.
func LeaderKey(prefix string) string { return prefix + "/leader" }

// PauseKey returns "P/snapshot/pause": the latest pause request's
// sequence number.
func PauseKey(prefix string) string { return prefix + "/snapshot/pause" }

// PauseAckKey returns "P/snapshot/paused/<worker>": the latest pause the
// worker has acknowledged.
func PauseAckKey(prefix, worker string) string { return PauseAckPrefix(prefix) + worker }

// PauseAckPrefix returns "P/snapshot/paused/".
func PauseAckPrefix(prefix string) string { return prefix + "/snapshot/paused/" }

// ResumeKey returns "P/snapshot/resume": the latest resume ("seq",
// "seq version") or "failed why".
func ResumeKey(prefix string) string { return prefix + "/snapshot/resume" }

// SnapshotTargetKey returns "P/snapshot/target".
func SnapshotTargetKey(prefix string) string { return prefix + "/snapshot/target" }

// SnapshotRequestKey returns "P/snapshot/request".
func SnapshotRequestKey(prefix string) string { return prefix + "/snapshot/request" }

// SnapshotLastKey returns "P/snapshot/last".
func SnapshotLastKey(prefix string) string { return prefix + "/snapshot/last" }

// ExportRequestKey returns "P/export/request".
func ExportRequestKey(prefix string) string { return prefix + "/export/request" }

// RollbackRequestKey returns "P/rollback/request".
func RollbackRequestKey(prefix string) string { return prefix + "/rollback/request" }

// RollbackLastKey returns "P/rollback/last".
func RollbackLastKey(prefix string) string { return prefix + "/rollback/last" }

// ExportLastKey returns "P/export/last".
func ExportLastKey(prefix string) string { return prefix + "/export/last" }

// AssignPrefix returns "P/assign/".
func AssignPrefix(prefix string) string { return prefix + "/assign/" }

// AssignKey returns "P/assign/<worker>".
func AssignKey(prefix, worker string) string { return AssignPrefix(prefix) + worker }

// PartitionsKey returns "P/partitions".
func PartitionsKey(prefix string) string { return prefix + "/partitions" }

// PartitionsAckKey returns "P/partitions-ack/<worker>".
func PartitionsAckKey(prefix, worker string) string { return prefix + "/partitions-ack/" + worker }

// PartitionsDonePrefix returns "P/partitions-done/".
func PartitionsDonePrefix(prefix string) string { return prefix + "/partitions-done/" }

// PartitionsDoneKey returns "P/partitions-done/<worker>".
func PartitionsDoneKey(prefix, worker string) string { return PartitionsDonePrefix(prefix) + worker }

// ProgressPrefix returns "P/progress/".
func ProgressPrefix(prefix string) string { return prefix + "/progress/" }

// ProgressKey returns "P/progress/<worker>": the worker's latest progress
// report.
func ProgressKey(prefix, worker string) string { return ProgressPrefix(prefix) + worker }

// OwnerAddrPrefix returns "P/dslide/owner/".
func OwnerAddrPrefix(prefix string) string { return prefix + "/dslide/owner/" }

// OwnerAddrKey returns "P/dslide/owner/<index>".
func OwnerAddrKey(prefix string, index int) string {
	return OwnerAddrPrefix(prefix) + strconv.Itoa(index)
}

// BarriersPrefix returns "P/barriers/".
func BarriersPrefix(prefix string) string { return prefix + "/barriers/" }

// BarrierMemberPrefix returns "P/barriers/<kind>.<id>/": the arrivals of
// one member, the keys its etcd role may write (a member's own records
// come first, so that a grant can name them).
func BarrierMemberPrefix(prefix, kind, id string) string {
	return BarriersPrefix(prefix) + kind + "." + id + "/"
}

// BarrierKey returns "P/barriers/<kind>.<id>/<name>".
func BarrierKey(prefix, kind, id, name string) string {
	return BarrierMemberPrefix(prefix, kind, id) + name
}
