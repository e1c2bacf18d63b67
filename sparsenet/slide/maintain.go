package slide

import (
	"fmt"
	"math"
)

// schedule is the rehash state machine (no I/O, no clock: one tick per
// batch). It decides which rows Maintain hashes in each call:
//
//   - Re-insertion sweeps: a cursor walks over the rows, ceil(d/period) rows
//     per tick, and yields those that are dirty (updated since last hashed),
//     at most SliceNeurons per tick; at the end it wraps around. The period
//     starts at RehashBase ticks; when a period's ticks have passed it is
//     multiplied by RehashGrowth, up to RehashMax. So every row is refreshed
//     about once per period, and the work per tick is d/period rows.
//   - Redraws: every RedrawPeriod ticks (counted from the end of the last
//     redraw) a rebuild starts: new functions, new tables, filled with
//     SliceNeurons rows per tick (all rows, dirty or not); the tick that
//     inserts the last row swaps them in. Sweeps pause during a rebuild and
//     restart from row 0 after it.
type schedule struct {
	cfg       Schedule
	d         int
	batch     int64   // ticks so far
	period    float64 // current re-insertion period, in ticks
	periodEnd int64   // the tick at which the current period ends
	cursor    int     // next row of the sweep
	sweeps    int     // completed sweeps

	redrawing  bool
	rcursor    int   // next row of the rebuild
	nextRedraw int64 // tick at which the next rebuild starts (0: never)
}

func newSchedule(cfg Schedule, d int) schedule {
	s := schedule{cfg: cfg, d: d, period: float64(cfg.RehashBase), periodEnd: int64(cfg.RehashBase)}
	if cfg.RedrawPeriod > 0 {
		s.nextRedraw = int64(cfg.RedrawPeriod)
	}
	return s
}

// step is the work of one tick.
type step struct {
	rows      []int32 // rows to hash, ascending
	build     bool    // rows go into the tables being built (else: re-insert)
	start     bool    // a rebuild starts: draw new functions, clear the new tables first
	swap      bool    // after inserting rows, the new tables replace the old
	sweepDone bool    // the sweep wrapped around
}

// tick advances the schedule by one batch; rows are appended to rows[:0].
// dirty reports whether a row needs re-insertion.
func (s *schedule) tick(dirty func(row int) bool, rows []int32) step {
	s.batch++
	if s.batch >= s.periodEnd {
		s.period = math.Min(s.period*s.cfg.RehashGrowth, float64(s.cfg.RehashMax))
		s.periodEnd = s.batch + int64(math.Ceil(s.period))
	}
	st := step{rows: rows[:0]}
	if !s.redrawing && s.nextRedraw > 0 && s.batch >= s.nextRedraw {
		s.redrawing, s.rcursor, st.start = true, 0, true
	}
	if s.redrawing {
		hi := min(s.d, s.rcursor+s.cfg.SliceNeurons)
		for r := s.rcursor; r < hi; r++ {
			st.rows = append(st.rows, int32(r))
		}
		s.rcursor, st.build = hi, true
		if hi == s.d {
			st.swap, s.redrawing, s.cursor = true, false, 0
			s.nextRedraw = s.batch + int64(s.cfg.RedrawPeriod)
		}
		return st
	}
	end := min(s.d, s.cursor+int(math.Ceil(float64(s.d)/s.period)))
	for r := s.cursor; r < end; r++ {
		if dirty(r) {
			st.rows = append(st.rows, int32(r))
			if len(st.rows) == s.cfg.SliceNeurons {
				end = r + 1
				break
			}
		}
	}
	s.cursor = end
	if end == s.d {
		s.cursor, st.sweepDone = 0, true
		s.sweeps++
	}
	return st
}

// MaintainStats says what one Maintain call did.
type MaintainStats struct {
	// Rehashed is the number of rows re-inserted into the tables in use.
	Rehashed int
	// Built is the number of rows inserted into the tables being built
	// for new hash functions.
	Built int
	// Started is true when a rebuild with new hash functions started, and
	// Swapped when the rebuilt tables replaced the old ones.
	Started, Swapped bool
	// SweepDone is true when a re-insertion sweep over all rows ended.
	SweepDone bool
	// Period is the current re-insertion period in batches.
	Period float64
}

// Maintain does one slice of hash-table upkeep; call it once after every
// TrainBatch. It re-inserts at most SliceNeurons rows that changed since
// they were last hashed, following the decaying schedule, or inserts
// SliceNeurons rows into the tables of a rebuild with new hash functions;
// see "Rehashing" in the package documentation. It does nothing for a
// layer without tables.
func (l *Layer) Maintain() MaintainStats {
	l.checkOpen()
	if l.tables == nil {
		return MaintainStats{}
	}
	st := l.sched.tick(l.dirty, l.mrows)
	l.mrows = st.rows
	ms := MaintainStats{Started: st.start, Swapped: st.swap, SweepDone: st.sweepDone, Period: l.sched.period}
	if st.start {
		l.updateCenter() // the rebuilt tables hash every row against it
		l.gen++
		fam, err := l.newFamily(l.gen)
		if err != nil {
			panic(fmt.Sprintf("slide: redraw: %v", err)) // the config was validated
		}
		l.backFam = fam
		if l.back == nil {
			if l.back, err = NewTables(l.d, l.par.K, l.par.L, l.par.R, hash3(l.cfg.Seed, tagTable, l.gen)); err != nil {
				panic(fmt.Sprintf("slide: redraw: %v", err))
			}
			l.backAt = make([]uint32, l.d)
		} else {
			l.back.Clear()
			l.back.seed = hash3(l.cfg.Seed, tagTable, l.gen)
		}
	}
	if st.build {
		l.insertRows(l.back, l.backFam, l.backAt, st.rows)
		ms.Built = len(st.rows)
	} else {
		l.insertRows(l.tables, l.fam, l.hashedAt, st.rows)
		ms.Rehashed = len(st.rows)
	}
	if st.swap {
		l.fam, l.backFam = l.backFam, nil
		l.tables, l.back = l.back, l.tables
		l.hashedAt, l.backAt = l.backAt, l.hashedAt
	}
	return ms
}

func (l *Layer) dirty(r int) bool { return l.steps[r] != l.hashedAt[r] }

// insertRows hashes the weight rows with fam, each minus the center
// (hashRow), and (re)assigns them in tabs (insertCodes).
func (l *Layer) insertRows(tabs *Tables, fam Family, at []uint32, rows []int32) {
	if len(rows) == 0 {
		return
	}
	codes := l.rowCodes(fam, rows, l.hashRow)
	l.insertCodes(tabs, at, rows, codes)
}

// rowCodes returns the codes fam gives the vectors vec(r, buf) of rows (one
// HashBatch of the gathered vectors, or in parallel over rows); vec writes
// row r's vector of fam.Dim() values to buf, or returns another slice.
// The codes are valid until the next call.
func (l *Layer) rowCodes(fam Family, rows []int32, vec func(r int32, buf []float32) []float32) []uint32 {
	L, dim, P := fam.L(), fam.Dim(), len(l.ws)
	if cap(l.mcodes) < len(rows)*L {
		l.mcodes = make([]uint32, len(rows)*L)
	}
	codes := l.mcodes[:len(rows)*L]
	if bh, ok := fam.(BatchHasher); ok {
		if cap(l.mrowbuf) < len(rows)*dim {
			l.mrowbuf = make([]float32, len(rows)*dim)
		}
		buf := l.mrowbuf[:len(rows)*dim]
		for j, r := range rows {
			dst := buf[j*dim : (j+1)*dim]
			copy(dst, vec(r, dst))
		}
		bh.HashBatch(buf, len(rows), codes)
		return codes
	}
	l.pool.run(func(q int) {
		lo, hi := span(q, P, len(rows))
		w := l.ws[q]
		if cap(w.hrow) < dim {
			w.hrow = make([]float32, dim)
		}
		for j := lo; j < hi; j++ {
			fam.Hash(vec(rows[j], w.hrow[:dim]), codes[j*L:(j+1)*L])
		}
	})
	return codes
}

// insertCodes (re)assigns rows to the buckets of their codes (len(rows) x
// L) in tabs (in parallel over tables, each table owned by one worker and
// filled in row order, so the result does not depend on the number of
// workers), then records their step counts in at.
func (l *Layer) insertCodes(tabs *Tables, at []uint32, rows []int32, codes []uint32) {
	L, P := tabs.l, len(l.ws)
	l.pool.run(func(q int) {
		for tb := q; tb < L; tb += P {
			for j, row := range rows {
				if a := j + prefetchAhead; a < len(rows) {
					tabs.prefetchInsert(tb, rows[a], codes[a*L+tb])
				}
				tabs.InsertTable(tb, row, codes[j*L+tb])
			}
		}
	})
	for _, row := range rows {
		at[row] = l.steps[row]
	}
}
