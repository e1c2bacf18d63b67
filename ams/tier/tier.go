package tier

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
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
	// The default value is 32 MiB.
	CacheBytes int64
}

// Store is one shard's cold tier: see the package documentation.
type Store struct {
	dir string
	db  *pebble.DB
	// reads and found count the rows asked for and found; writes and
	// deletes the rows written and deleted.
	reads, found, writes, deletes atomic.Int64
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
		o.CacheBytes = 32 << 20
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{Cache: cache, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("tier: open %s: %w", dir, err)
	}
	return &Store{dir: dir, db: db}, nil
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

// Get reads the rows of ids of table with one iterator: found[i] reports
// whether ids[i] has a row, and dst[i] is a copy of it (appended to
// dst[i][:0]) or dst[i][:0].
func (s *Store) Get(table uint32, ids []uint64, dst [][]byte, found []bool) error {
	if len(dst) != len(ids) || len(found) != len(ids) {
		return fmt.Errorf("tier: get %d ids into %d rows and %d flags", len(ids), len(dst), len(found))
	}
	if err := sorted(ids); err != nil {
		return err
	}
	var lo, hi [keyLen]byte
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key(lo[:], table, 0), UpperBound: tableEnd(hi[:0], table)})
	if err != nil {
		return fmt.Errorf("tier: get in %s: %w", s.dir, err)
	}
	var k [keyLen]byte
	n := 0
	for i, id := range ids {
		kk := key(k[:], table, id)
		found[i], dst[i] = false, dst[i][:0]
		if it.SeekGE(kk) && string(it.Key()) == string(kk) {
			found[i], dst[i] = true, append(dst[i], it.Value()...)
			n++
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("tier: get %d ids in %s: %w", len(ids), s.dir, err)
	}
	s.reads.Add(int64(len(ids)))
	s.found.Add(int64(n))
	return nil
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
