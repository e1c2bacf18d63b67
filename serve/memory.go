package serve

import (
	"os"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
)

// Memory is the server's accounting of its memory (Status.Memory and the
// xps_serve_memory_bytes metric), in bytes. The model's part is counted
// from the replicas' tables and parameters; the rest is the Go runtime's
// and the operating system's view of the process:
//
//	values    the served replica's row values and dense parameters: the
//	          model itself, what an export of fp32 rows holds
//	tables    the served replica's tables and parameters whole: values,
//	          the ids (6 bytes a row: ams.Frozen), the runs' bucket
//	          offsets, and the rows deltas added (an overlay ams.Table)
//	heap      the Go heap in use (live objects and what the collector has
//	          not yet freed): request buffers, a delta's rows
//	runtime   everything the Go runtime holds from the system (heap,
//	          stacks, its own metadata), released pages excluded
//	rss       the process's resident set (0 where /proc has none)
//
// rss - tables is what serving costs beyond its model: request buffers,
// the runtime, the binary, and while a delta is applied its rows, while a
// new full export loads the new model (the old one's memory is given back
// as soon as its requests end). The README's sizing rule is written from
// these figures.
type Memory struct {
	Values  int64 `json:"values_bytes"`
	Tables  int64 `json:"tables_bytes"`
	Heap    int64 `json:"heap_bytes"`
	Runtime int64 `json:"runtime_bytes"`
	RSS     int64 `json:"rss_bytes"`
}

// replicaMemory is a replica's values and whole table bytes.
type replicaMemory struct{ values, tables int64 }

// measure counts r's memory into r.mem, for Status; the caller holds
// r.mu (either way) or r does not serve yet.
func (r *replica) measure() {
	m := replicaMemory{values: 4 * int64(len(r.params)), tables: r.tableBytes()}
	for _, t := range r.tables {
		m.values += 4 * int64(t.Len()) * int64(t.Dim())
	}
	r.mem.Store(&m)
}

// memory returns the server's accounting (see Memory).
func (s *Server) memory() Memory {
	var m Memory
	if r := s.cur.Load(); r != nil {
		rm := r.mem.Load()
		if rm != nil {
			m.Values, m.Tables = rm.values, rm.tables
		}
	}
	samples := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(samples)
	for i := range samples {
		if samples[i].Value.Kind() != rtmetrics.KindUint64 {
			return m
		}
	}
	m.Heap = int64(samples[0].Value.Uint64() + samples[1].Value.Uint64())
	m.Runtime = int64(samples[2].Value.Uint64() - samples[3].Value.Uint64())
	m.RSS = residentBytes()
	return m
}

// residentBytes is the process's resident set from /proc/self/statm (0
// where there is none).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
