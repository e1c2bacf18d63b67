package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
)

// ErrUnsorted is returned when a batch's ids are not strictly ascending.
var ErrUnsorted = errors.New("tier: ids are not sorted strictly ascending")

// ErrBadDir is returned (wrapped) by Open for a directory the Store cannot
// use: its parent missing, not a directory, or not writable.
var ErrBadDir = errors.New("tier: unusable directory")

// Options configure a Store.
type Options struct {
	// Dir is the Store's directory, created if missing; its parent must
	// exist. Required.
	Dir string
	// Fresh discards what Dir holds (files of a dead process: the cold
	// rows are restored from a snapshot, not from here).
	Fresh bool
	// CacheBytes is Pebble's block cache.
	//
	// The default value is DefaultCacheBytes.
	CacheBytes int64
}

// DefaultCacheBytes is the default block cache, and MemTableBytes the
// size of a memtable (Pebble keeps up to two, one being flushed): with
// them, a Store's DRAM is at most about 128 MiB whatever the rows it
// holds, the fixed overhead of a shard's cold tier. On a tiered job whose
// DRAM budget held 5% of its rows, a cache of 32, 64 and 128 MiB gave
// 12.4K, 13.8K and 15.0K samples/s.
const (
	DefaultCacheBytes = 64 << 20
	MemTableBytes     = 32 << 20
)

// Store is one shard's cold tier: see the package documentation.
type Store struct {
	dir string
	db  *pebble.DB
	// reads and found count the rows asked for and found; writes and
	// deletes the rows written and deleted.
	reads, found, writes, deletes atomic.Int64
	// bgErr is the first error of Pebble's flushes and compactions (a
	// full disk): every later write fails with it (invariant 3), rather
	// than fill the memtables until writes stall for ever.
	bgErr atomic.Pointer[error]
}

// background records an error of Pebble's background work.
func (s *Store) background(err error) {
	err = fmt.Errorf("tier: %s: writing to disk failed: %w", s.dir, err)
	s.bgErr.CompareAndSwap(nil, &err)
}

// failed returns the background error, if any.
func (s *Store) failed() error {
	if p := s.bgErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Open opens (or creates) the Store in o.Dir.
func Open(o Options) (*Store, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("%w: no directory given", ErrBadDir)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadDir, o.Dir, err)
	}
	if fi, err := os.Stat(filepath.Dir(dir)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s: its parent %s is missing or not a directory", ErrBadDir, dir, filepath.Dir(dir))
	}
	if o.Fresh {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadDir, dir, err)
		}
	}
	if err := checkWritable(dir); err != nil {
		return nil, err
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	s := &Store{dir: dir}
	opts := pebbleOptions(cache)
	opts.EventListener = &pebble.EventListener{BackgroundError: s.background}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("tier: open %s: %w", dir, err)
	}
	s.db = db
	return s, nil
}

// pebbleOptions are the DB's options. Rows are written, read back and
// deleted in batches, are not kept across processes (no WAL: durability
// is the snapshot's), are floats that do not compress (no compression:
// snappy took an eighth of a tiered job's CPU and saved little), and are
// read by point lookups, which a Bloom filter per table file lets skip
// the files without the key.
func pebbleOptions(cache *pebble.Cache) *pebble.Options {
	o := &pebble.Options{Cache: cache, Logger: quietLogger{}, DisableWAL: true, MemTableSize: MemTableBytes}
	o.Levels = make([]pebble.LevelOptions, 7)
	for i := range o.Levels {
		o.Levels[i] = pebble.LevelOptions{Compression: pebble.NoCompression, FilterPolicy: bloom.FilterPolicy(10)}
	}
	o.EnsureDefaults()
	return o
}

// checkWritable creates dir if missing and a file in it, and removes the
// file: a read-only or full disk fails here, at Open, with the path.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadDir, dir, err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err == nil {
		_, err = f.Write([]byte("probe"))
		err = errors.Join(err, f.Close(), os.Remove(f.Name()))
	}
	if err != nil {
		return fmt.Errorf("%w: %s is not writable: %w", ErrBadDir, dir, err)
	}
	return nil
}

// Dir returns the Store's directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the DB.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("tier: close %s: %w", s.dir, err)
	}
	return nil
}

// keyLen is the length of a key: the table (4 bytes) and the id (8).
const keyLen = 12

func key(dst []byte, table uint32, id uint64) []byte {
	dst = binary.BigEndian.AppendUint32(dst[:0], table)
	return binary.BigEndian.AppendUint64(dst, id)
}

// sorted checks invariant 1.
func sorted(ids []uint64) error {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return fmt.Errorf("%w: ids[%d] = %d after %d", ErrUnsorted, i, ids[i], ids[i-1])
		}
	}
	return nil
}

// Put writes rows[i] as the row of ids[i] of table, in one batch.
func (s *Store) Put(table uint32, ids []uint64, rows [][]byte) error {
	if len(rows) != len(ids) {
		return fmt.Errorf("tier: put %d rows for %d ids", len(rows), len(ids))
	}
	if err := sorted(ids); err != nil {
		return err
	}
	if err := s.failed(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var k [keyLen]byte
	for i, id := range ids {
		if err := b.Set(key(k[:], table, id), rows[i], nil); err != nil {
			return fmt.Errorf("tier: put in %s: %w", s.dir, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("tier: put %d rows in %s: %w", len(ids), s.dir, err)
	}
	s.writes.Add(int64(len(ids)))
	return nil
}

// Delete removes the rows of ids of table (missing ones are no error).
func (s *Store) Delete(table uint32, ids []uint64) error {
	if err := sorted(ids); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	var k [keyLen]byte
	for _, id := range ids {
		if err := b.Delete(key(k[:], table, id), nil); err != nil {
			return fmt.Errorf("tier: delete in %s: %w", s.dir, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("tier: delete %d rows in %s: %w", len(ids), s.dir, err)
	}
	s.deletes.Add(int64(len(ids)))
	return nil
}

// Get reads the rows of ids of table by point lookups (each file's Bloom
// filter skips the files without the key), spread over up to getParallel
// goroutines for a large batch: found[i] reports
// whether ids[i] has a row, and dst[i] is a copy of it (appended to
// dst[i][:0]) or dst[i][:0].
func (s *Store) Get(table uint32, ids []uint64, dst [][]byte, found []bool) error {
	if len(dst) != len(ids) || len(found) != len(ids) {
		return fmt.Errorf("tier: get %d ids into %d rows and %d flags", len(ids), len(dst), len(found))
	}
	if err := sorted(ids); err != nil {
		return err
	}
	n, err := s.getAll(table, ids, dst, found)
	if err != nil {
		return err
	}
	s.reads.Add(int64(len(ids)))
	s.found.Add(int64(n))
	return nil
}

// getParallel is how many goroutines a large Get spreads its lookups
// over, getChunk the fewest lookups each gets.
const (
	getParallel = 4
	getChunk    = 256
)

// getAll looks the ids up, in parallel chunks when there are many, and
// returns how many it found.
func (s *Store) getAll(table uint32, ids []uint64, dst [][]byte, found []bool) (int, error) {
	parts := min(getParallel, (len(ids)+getChunk-1)/getChunk)
	if parts <= 1 {
		return s.getRange(table, ids, dst, found)
	}
	var wg sync.WaitGroup
	ns, errs := make([]int, parts), make([]error, parts)
	for p := range parts {
		lo, hi := p*len(ids)/parts, (p+1)*len(ids)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns[p], errs[p] = s.getRange(table, ids[lo:hi], dst[lo:hi], found[lo:hi])
		}()
	}
	wg.Wait()
	n := 0
	for _, k := range ns {
		n += k
	}
	return n, errors.Join(errs...)
}

// getRange looks ids up one at a time (point lookups: the Bloom filters
// of the files skip the levels without the key).
func (s *Store) getRange(table uint32, ids []uint64, dst [][]byte, found []bool) (int, error) {
	var k [keyLen]byte
	n := 0
	for i, id := range ids {
		found[i], dst[i] = false, dst[i][:0]
		v, closer, err := s.db.Get(key(k[:], table, id))
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("tier: get %d ids in %s: %w", len(ids), s.dir, err)
		}
		found[i], dst[i] = true, append(dst[i], v...)
		n++
		if err := closer.Close(); err != nil {
			return n, fmt.Errorf("tier: get %d ids in %s: %w", len(ids), s.dir, err)
		}
	}
	return n, nil
}

// tableEnd appends the first key after table's rows (the next table's
// first; for the last table number, a key longer than any of its keys).
func tableEnd(dst []byte, table uint32) []byte {
	if table == ^uint32(0) {
		return append(binary.BigEndian.AppendUint32(dst, table), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0)
	}
	return binary.BigEndian.AppendUint32(dst, table+1)
}

// Scan calls fn for every row of table in id order (row is a copy); an
// error of fn stops it and is returned.
func (s *Store) Scan(table uint32, fn func(id uint64, row []byte) error) error {
	var lo, hi [keyLen]byte
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key(lo[:], table, 0), UpperBound: tableEnd(hi[:0], table)})
	if err != nil {
		return fmt.Errorf("tier: scan in %s: %w", s.dir, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(binary.BigEndian.Uint64(it.Key()[4:]), append([]byte(nil), it.Value()...)); err != nil {
			it.Close()
			return err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("tier: scan in %s: %w", s.dir, err)
	}
	return nil
}

// ScanFrom calls fn for at most n rows of table, in id order, from the
// first id above after (from the table's first row when first is set);
// row aliases the Store's memory, valid only during the call. It returns
// the last id visited and whether it reached the table's end. An error
// of fn stops it and is returned.
func (s *Store) ScanFrom(table uint32, after uint64, first bool, n int, fn func(id uint64, row []byte) error) (last uint64, end bool, err error) {
	var lo, hi [keyLen]byte
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key(lo[:], table, 0), UpperBound: tableEnd(hi[:0], table)})
	if err != nil {
		return 0, false, fmt.Errorf("tier: scan in %s: %w", s.dir, err)
	}
	ok := it.First()
	if !first {
		if after == ^uint64(0) {
			ok = false
		} else {
			ok = it.SeekGE(key(lo[:], table, after+1))
		}
	}
	last, end = after, true
	for k := 0; ok; ok = it.Next() {
		if k == n {
			end = false
			break
		}
		k++
		last = binary.BigEndian.Uint64(it.Key()[4:])
		if err := fn(last, it.Value()); err != nil {
			it.Close()
			return last, false, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return last, false, fmt.Errorf("tier: scan in %s: %w", s.dir, err)
	}
	return last, end, nil
}

// IDs appends the id of every row of table to dst, in id order.
func (s *Store) IDs(table uint32, dst []uint64) ([]uint64, error) {
	var lo, hi [keyLen]byte
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key(lo[:], table, 0), UpperBound: tableEnd(hi[:0], table)})
	if err != nil {
		return dst, fmt.Errorf("tier: list ids in %s: %w", s.dir, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		dst = append(dst, binary.BigEndian.Uint64(it.Key()[4:]))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return dst, fmt.Errorf("tier: list ids in %s: %w", s.dir, err)
	}
	return dst, nil
}

// Clear removes every row of every table.
func (s *Store) Clear() error {
	var hi [keyLen + 1]byte
	if err := s.db.DeleteRange(nil, tableEnd(hi[:0], ^uint32(0)), pebble.NoSync); err != nil {
		return fmt.Errorf("tier: clear %s: %w", s.dir, err)
	}
	return nil
}

// DropTable removes every row of table.
func (s *Store) DropTable(table uint32) error {
	var lo, hi [keyLen]byte
	if err := s.db.DeleteRange(key(lo[:], table, 0), tableEnd(hi[:0], table), pebble.NoSync); err != nil {
		return fmt.Errorf("tier: drop table %d in %s: %w", table, s.dir, err)
	}
	return nil
}

// Stats are a Store's counters and Pebble's own figures.
type Stats struct {
	// Reads and Found count the rows Get was asked for and found: their
	// ratio is the cold tier's hit ratio (a row the shard expected here
	// and did not find was never written).
	Reads, Found int64
	// Writes and Deletes count the rows Put and Delete handled.
	Writes, Deletes int64
	// DiskBytes is the size of the DB's files; CompactionDebt Pebble's
	// estimate of the bytes compactions still have to write; WriteAmp
	// the write amplification over all levels.
	DiskBytes, CompactionDebt uint64
	WriteAmp                  float64
}

// Stats returns the Store's figures.
func (s *Store) Stats() Stats {
	m := s.db.Metrics()
	total := m.Total()
	return Stats{Reads: s.reads.Load(), Found: s.found.Load(), Writes: s.writes.Load(), Deletes: s.deletes.Load(),
		DiskBytes: m.DiskSpaceUsage(), CompactionDebt: m.Compact.EstimatedDebt, WriteAmp: total.WriteAmp()}
}

// quietLogger drops Pebble's informational logs and keeps its errors on
// standard error (Pebble's Logger: Infof, Errorf, Fatalf).
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Errorf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "tier: pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "tier: pebble: "+format+"\n", args...)
	os.Exit(1)
}
