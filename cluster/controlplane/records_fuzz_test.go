package controlplane

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/reader"
)

// FuzzRecords reads arbitrary bytes as each etcd record of the control
// plane, as the scheduler, the workers and the status page read them
// (keys.go lists who writes and reads each): no input panics, and
//
//   - a resume (ParseResume) and a pause or acknowledgement (parseSeq)
//     decode to what their writers (PutResume, PutFailed, putSeq) encode
//     back into a value that decodes the same, and every value the
//     writers make decodes to what they were given;
//   - a member record (membership.CheckRecord) is taken only under a
//     member key naming its kind and id, with a lease, and is then a
//     valid member whose own encoding is taken too; a worker's index
//     (membership.WorkerIndex) is that of the name WorkerName gives;
//   - the JSON records (assignments, events, results, the job, owner
//     addresses, partitions, the snapshot target) that decode encode to
//     JSON that decodes to the same record.
func FuzzRecords(f *testing.F) {
	prefix := "/xps/c"
	member := func(m membership.Member) []byte {
		b, err := json.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(membership.MemberKey(prefix, membership.KindWorker, "worker-3"), int64(7),
		member(membership.Member{Kind: membership.KindWorker, ID: "worker-3", Addr: "h:1", PID: 9, Started: time.Unix(5, 6).UTC()}))
	f.Add(membership.MemberKey(prefix, membership.KindAMS, "ams-0"), int64(0), []byte(`{"kind":"ams","id":"ams-1"}`))
	f.Add("worker-07", int64(1), []byte("12 3"))
	f.Add("x", int64(1), []byte("failed shard 2 lost its rows"))
	f.Add("x", int64(1), []byte(`{"splits":[{"path":"a","offset":0,"length":10}]}`))
	f.Add("x", int64(1), []byte(`{"time":"2026-01-02T03:04:05Z","type":"joined","member":{"kind":"worker","id":"worker-0"},"version":3}`))
	f.Add("x", int64(1), []byte(`{"generation":2,"topic":"t","partitions":4,"workers":{"worker-0":[0,2],"worker-1":[1,3]}}`))
	f.Fuzz(func(t *testing.T, key string, lease int64, b []byte) {
		checkResume(t, b)
		checkSeq(t, b)
		checkMember(t, prefix, key, lease, b)
		roundTrip[Assignment](t, b)
		roundTrip[Event](t, b)
		roundTrip[ExportResult](t, b)
		roundTrip[JobRecord](t, b)
		roundTrip[OwnerAddr](t, b)
		roundTrip[PartitionAssignment](t, b)
		roundTrip[RollbackResult](t, b)
		roundTrip[SnapshotResult](t, b)
		roundTrip[SnapshotTarget](t, b)
		roundTrip[reader.Position](t, b)
	})
}

// encodeResume is the value PutResume and PutFailed write.
func encodeResume(r Resumed) string {
	if r.Failed {
		return "failed " + r.Why
	}
	v := strconv.FormatUint(r.Seq, 10)
	if r.Version > 0 {
		v += " " + strconv.FormatUint(r.Version, 10)
	}
	return v
}

func checkResume(t *testing.T, b []byte) {
	r, ok := ParseResume(b)
	if !ok {
		return
	}
	if r.Failed && r.Seq != math.MaxUint64 {
		t.Fatalf("ParseResume(%q) = %+v: a failure resumes every pause", b, r)
	}
	if again, ok := ParseResume([]byte(encodeResume(r))); !ok || again != r {
		t.Fatalf("ParseResume(%q) = %+v, which the writer encodes as %q, which decodes as %+v, %v", b, r, encodeResume(r), again, ok)
	}
	// The writer's values of the numbers b holds decode to them.
	w := Resumed{Seq: uint64(len(b)) * 1e15, Version: r.Seq}
	if got, ok := ParseResume([]byte(encodeResume(w))); !ok || got != w {
		t.Fatalf("PutResume(%d, %d) writes %q, which decodes as %+v, %v", w.Seq, w.Version, encodeResume(w), got, ok)
	}
}

func checkSeq(t *testing.T, b []byte) {
	n, ok := parseSeq(b)
	if !ok {
		return
	}
	if again, ok := parseSeq([]byte(strconv.FormatUint(n, 10))); !ok || again != n {
		t.Fatalf("parseSeq(%q) = %d, which putSeq writes as a value that decodes as %d, %v", b, n, again, ok)
	}
}

func checkMember(t *testing.T, prefix, key string, lease int64, b []byte) {
	if i, ok := membership.WorkerIndex(key); ok && membership.WorkerName(i) != key {
		t.Fatalf("WorkerIndex(%q) = %d, whose name is %q", key, i, membership.WorkerName(i))
	}
	for _, k := range []string{key, membership.MemberKey(prefix, membership.KindWorker, key)} {
		m, err := membership.CheckRecord(prefix, k, b, lease)
		if err != nil {
			if !errors.Is(err, membership.ErrNotAMember) && !errors.Is(err, membership.ErrBadMember) {
				t.Fatalf("CheckRecord(%q, %q) = %v, neither ErrNotAMember nor ErrBadMember", k, b, err)
			}
			continue
		}
		kind, id, ok := membership.ParseMemberKey(prefix, k)
		if !ok || m.Kind != kind || m.ID != id || lease == 0 || m.Validate() != nil {
			t.Fatalf("CheckRecord(%q, %q, lease %d) took %+v", k, b, lease, m)
		}
		enc, err := json.Marshal(m)
		if err != nil {
			continue // a time json cannot encode: not one Register writes
		}
		if again, err := membership.CheckRecord(prefix, k, enc, lease); err != nil || !again.Started.Equal(m.Started) ||
			again.Kind != m.Kind || again.ID != m.ID || again.Addr != m.Addr || again.PID != m.PID {
			t.Fatalf("member %q taken as %+v, encoded as %s, taken as %+v, %v", b, m, enc, again, err)
		}
	}
}

// roundTrip: a record that decodes encodes as JSON that decodes to it.
func roundTrip[T any](t *testing.T, b []byte) {
	var v T
	if json.Unmarshal(b, &v) != nil {
		return
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return // a time json cannot encode (a year beyond 9999): no writer of ours makes one
	}
	var back T
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatalf("%T %q encodes as %s, which does not decode: %v", v, b, enc, err)
	}
	if again, err := json.Marshal(back); err != nil || !bytes.Equal(again, enc) {
		t.Fatalf("%T %q encodes as %s, which decodes and encodes as %s (%v)", v, b, enc, again, err)
	}
}
