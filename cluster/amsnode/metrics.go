package amsnode

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/shard"
	"github.com/xdlgo/xps/cluster/ops"
)

// collector reads a shard's figures when Prometheus scrapes: tables'
// rows and memory, the counters of admission, expiry, the budget and
// non-finite rows, the version served and the traffic. Reading them asks
// every stripe owner once (shard.Stats), as a worker's progress line does.
type collector struct {
	s     *shard.Shard
	descs ops.Descs
}

// shardMetrics are the collector's metrics: name, help, labels; a name
// ending in _total is a counter.
var shardMetrics = [][3]string{
	{"table_rows", "Rows held, by table.", "table"},
	{"table_row_bytes", "Memory of the rows as the budget counts it, by table.", "table"},
	{"table_memory_bytes", "Memory the table's storage holds, by table.", "table"},
	{"table_filter_bytes", "Memory of the admission filter, by table.", "table"},
	{"rows_created_total", "Rows created by pulls and pushes (admitted IDs), by table.", "table"},
	{"not_admitted_total", "IDs the admission filter did not admit, by table and operation (pull: read as the initial row; push: gradient dropped).", "table,op"},
	{"rows_expired_total", "Rows removed by the table's expiry rules, by table.", "table"},
	{"rows_evicted_total", "Rows removed to keep the shard within its memory budget, by table.", "table"},
	{"nonfinite_rows_total", "Rows holding a NaN or Inf, by table and action (refused: a pushed gradient not applied; clipped: NaN as 0, Inf as the table's nonfinite_bound, then applied or loaded).", "table,action"},
	{"dense_nonfinite_refused_total", "Gradients of the shard's range of a dense vector refused for a NaN or Inf, by vector.", "dense"},
	{"tier_cold_rows", "Rows in the cold tier on disk, by table (tiered tables).", "table"},
	{"tier_cold_bytes", "Encoded bytes of the rows in the cold tier, by table.", "table"},
	{"tier_lookups_total", "IDs pulls and pushes asked of a tiered table, by table.", "table"},
	{"tier_misses_total", "IDs without a row in DRAM, by table: 1 - misses/lookups is the DRAM hit ratio.", "table"},
	{"tier_disk_reads_total", "IDs read from the cold tier, by table.", "table"},
	{"tier_disk_batches_total", "Batched reads of the cold tier (one per stripe's part of a request that missed), by table.", "table"},
	{"tier_promoted_total", "Rows moved from disk to DRAM, by table.", "table"},
	{"tier_demoted_total", "Rows the budget moved from DRAM to disk, by table.", "table"},
	{"tier_disk_bytes", "Size of the cold tier's Pebble files, by directory.", "dir"},
	{"tier_compaction_debt_bytes", "Pebble's estimate of the bytes compactions still have to write, by directory.", "dir"},
	{"tier_write_amplification", "Pebble's write amplification over all levels, by directory.", "dir"},
	{"version", "The cluster version the shard serves (0: none).", ""},
	{"pulls_total", "Pull requests served.", ""},
	{"pushes_total", "Push requests applied.", ""},
	{"rows_pulled_total", "Rows sent by pulls.", ""},
	{"rows_pushed_total", "Row gradients applied by pushes.", ""},
}

// emitTier emits a tiered table's figures.
func emitTier(emit func(string, prometheus.ValueType, float64, ...string), name string, u ams.TierUsage) {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	emit("tier_cold_rows", gauge, float64(u.ColdRows), name)
	emit("tier_cold_bytes", gauge, float64(u.ColdBytes), name)
	emit("tier_lookups_total", counter, float64(u.Lookups), name)
	emit("tier_misses_total", counter, float64(u.Misses), name)
	emit("tier_disk_reads_total", counter, float64(u.DiskReads), name)
	emit("tier_disk_batches_total", counter, float64(u.DiskBatches), name)
	emit("tier_promoted_total", counter, float64(u.Promoted), name)
	emit("tier_demoted_total", counter, float64(u.Demoted), name)
}

func newCollector(s *shard.Shard) *collector {
	return &collector{s: s, descs: ops.NewDescs("ams", shardMetrics)}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) { c.descs.Describe(ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.s.Stats()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.descs["version"], err)
		return
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	emit := func(name string, kind prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], kind, v, labels...)
	}
	for _, t := range st.Tables {
		emit("table_rows", gauge, float64(t.Rows), t.Name)
		emit("table_row_bytes", gauge, float64(t.RowBytes), t.Name)
		emit("table_memory_bytes", gauge, float64(t.MemoryBytes), t.Name)
		emit("table_filter_bytes", gauge, float64(t.FilterBytes), t.Name)
		emit("rows_created_total", counter, float64(t.Created), t.Name)
		emit("not_admitted_total", counter, float64(t.FilteredPulls), t.Name, "pull")
		emit("not_admitted_total", counter, float64(t.FilteredPushes), t.Name, "push")
		emit("rows_expired_total", counter, float64(t.Expired), t.Name)
		emit("rows_evicted_total", counter, float64(t.Evicted), t.Name)
		emit("nonfinite_rows_total", counter, float64(t.NonFiniteRefused), t.Name, "refused")
		emit("nonfinite_rows_total", counter, float64(t.NonFiniteClipped), t.Name, "clipped")
		if t.Tier != (ams.TierUsage{}) {
			emitTier(emit, t.Name, t.Tier)
		}
	}
	for _, d := range st.Dense {
		emit("dense_nonfinite_refused_total", counter, float64(d.NonFiniteRefused), d.Name)
	}
	for _, d := range st.Tiers {
		emit("tier_disk_bytes", gauge, float64(d.DiskBytes), d.Dir)
		emit("tier_compaction_debt_bytes", gauge, float64(d.CompactionDebt), d.Dir)
		emit("tier_write_amplification", gauge, d.WriteAmp, d.Dir)
	}
	emit("version", gauge, float64(st.Version))
	emit("pulls_total", counter, float64(st.Pulls))
	emit("pushes_total", counter, float64(st.Pushes))
	emit("rows_pulled_total", counter, float64(st.RowsPulled))
	emit("rows_pushed_total", counter, float64(st.RowsPushed))
}
