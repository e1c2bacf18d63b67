package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/objstorage"
	"github.com/cockroachdb/pebble/sstable"
)

// FormatVersion is the manifest format this package writes: 2 names each
// file's CRC-32C, 1 (still read) its SHA-256.
const FormatVersion = 2

// oldestFormat is the oldest manifest format this package reads.
const oldestFormat = 1

// ManifestName is the manifest's file name inside a snapshot's directory.
const ManifestName = "manifest.json"

// ErrCorrupt is wrapped by the errors about a snapshot that is incomplete,
// truncated or damaged (a bad manifest, a missing file, a size or checksum
// that does not match).
var ErrCorrupt = errors.New("snapshot: corrupt")

// ErrNoSnapshot is wrapped by Latest's error when the store holds no
// complete, intact snapshot.
var ErrNoSnapshot = errors.New("snapshot: no good snapshot")

// ErrOrder is wrapped by TableWriter.Add's error for a key that does not
// follow the previous one.
var ErrOrder = errors.New("snapshot: keys out of order")

// dirPrefix begins the name of a snapshot's directory.
const dirPrefix = "snap-"

// Dir returns the directory of snapshot seq: "snap-" and seq in 20 digits,
// so that names sort as the sequence numbers do (SeqDir).
func Dir(seq uint64) string { return SeqDir(dirPrefix, seq) }

// FileMeta is a file of a snapshot: its name relative to the snapshot's
// directory, its size and a checksum of its bytes: the CRC-32C (Castagnoli)
// in 8 hex digits, as this package writes, or, in files written before
// (manifest format 1), the SHA-256. The checksum guards against damage,
// not against forgery (nor could it: the manifest holding it is not
// signed), and CRC-32C, computed by the CPU's crc32 instruction at several
// GB/s a core, keeps it off a snapshot's critical path, where SHA-256 took
// a quarter of the CPU of writing one (BENCHMARKS, issue 30).
type FileMeta struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C string `json:"crc32c,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Rows is the number of rows of a table file, Deletes the number of
	// its deletions (TableWriter.Delete; none in a snapshot).
	Rows    int64 `json:"rows,omitempty"`
	Deletes int64 `json:"deletes,omitempty"`
	// Layout is a table file's entries: "" one row (or deletion) each,
	// LayoutBlocks blocks of rows of RowBytes bytes each.
	Layout   string `json:"layout,omitempty"`
	RowBytes int    `json:"row_bytes,omitempty"`
}

// TableEntry is a sparse table: its specification (the AMS's own JSON) and
// one sorted table file per shard that wrote it.
type TableEntry struct {
	Name  string          `json:"name"`
	Spec  json.RawMessage `json:"spec,omitempty"`
	Files []FileMeta      `json:"files"`
	// Admission holds the states of the table's admission filter, one
	// file per shard (FilterName), when its policy keeps state: the
	// filter decides as part of the model.
	Admission []FileMeta `json:"admission,omitempty"`
}

// DenseEntry is a dense parameter vector stored as a raw file.
type DenseEntry struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
	// Lo and Hi bound the range [Lo, Hi) of the vector the file holds
	// (also in the file's header); both zero in older snapshots.
	Lo int `json:"lo,omitempty"`
	Hi int `json:"hi,omitempty"`
	// Spec is the vector's declaration (ams.DenseSpec as JSON), so that a
	// restore onto fresh shards can declare it; absent in older snapshots.
	Spec json.RawMessage `json:"spec,omitempty"`
	File FileMeta        `json:"file"`
}

// Part is what one shard wrote of a snapshot, for the manifest: its table
// files, its dense ranges and its state entries (reader positions).
type Part struct {
	Tables []TableEntry               `json:"tables"`
	Dense  []DenseEntry               `json:"dense,omitempty"`
	State  map[string]json.RawMessage `json:"state,omitempty"`
}

// Add merges p into m: each table's files join its entry (in the order
// the parts are added), dense entries and state entries are appended.
// Two parts with one state key and different values (a key every shard
// keeps, such as sync-mode progress, must be equal on all), or with specs
// that differ for one table, are an error.
func (m *Manifest) Add(p Part) error {
	for _, t := range p.Tables {
		i := slices.IndexFunc(m.Tables, func(e TableEntry) bool { return e.Name == t.Name })
		if i < 0 {
			m.Tables = append(m.Tables, TableEntry{Name: t.Name, Spec: t.Spec})
			i = len(m.Tables) - 1
		} else if !bytes.Equal(m.Tables[i].Spec, t.Spec) {
			return fmt.Errorf("snapshot: table %q has different specs on different shards", t.Name)
		}
		m.Tables[i].Files = append(m.Tables[i].Files, t.Files...)
		m.Tables[i].Admission = append(m.Tables[i].Admission, t.Admission...)
	}
	m.Dense = append(m.Dense, p.Dense...)
	for k, v := range p.State {
		if m.Readers == nil {
			m.Readers = map[string]json.RawMessage{}
		}
		if old, dup := m.Readers[k]; dup && !bytes.Equal(old, v) {
			return fmt.Errorf("snapshot: state %q differs on two shards", k)
		}
		m.Readers[k] = v
	}
	return nil
}

// ErrIncomplete is returned (wrapped) by CheckComplete: the parts do not
// make a whole model.
var ErrIncomplete = errors.New("snapshot: incomplete")

// CheckComplete checks, before the manifest is committed, that its parts
// make a whole model: every table has one file from each of the Shards
// shards, the ranges of every dense vector cover it exactly, and every key
// of require is among the state entries (Readers, or Config for
// configKey). A shard that took part in a snapshot without the model's
// rows (restarted empty) fails it here rather than being recorded as good.
func (m *Manifest) CheckComplete(require []string, configKey string) error {
	if m.Shards <= 0 {
		return fmt.Errorf("%w: %d shards", ErrIncomplete, m.Shards)
	}
	for _, t := range m.Tables {
		names := map[string]bool{}
		for _, f := range t.Files {
			k, ok := TableFileShard(t.Name, f.Name)
			if !ok || k >= m.Shards || names[f.Name] {
				return fmt.Errorf("%w: table %q: file %q is not one of a shard of %d, or is named twice", ErrIncomplete, t.Name, f.Name, m.Shards)
			}
			names[f.Name] = true
		}
		for i := range m.Shards {
			if !names[TableName(t.Name, i)] {
				return fmt.Errorf("%w: table %q has no file from shard %d of %d", ErrIncomplete, t.Name, i, m.Shards)
			}
			n := countFunc(t.Admission, func(f FileMeta) bool { return f.Name == FilterName(t.Name, i) })
			if len(t.Admission) > 0 && n != 1 {
				return fmt.Errorf("%w: table %q has %d admission filter files from shard %d of %d", ErrIncomplete, t.Name, n, i, m.Shards)
			}
		}
	}
	if err := m.checkDenseCover(); err != nil {
		return err
	}
	for _, k := range require {
		if _, ok := m.Readers[k]; !ok && !(k == configKey && len(m.Config) > 0) {
			return fmt.Errorf("%w: state entry %q, in the model the cluster restored or last saved, is missing", ErrIncomplete, k)
		}
	}
	return nil
}

// checkDenseCover checks that the ranges of each dense vector cover it
// exactly (entries of older snapshots, without ranges, are not checked).
func (m *Manifest) checkDenseCover() error {
	byName := map[string][]DenseEntry{}
	for _, d := range m.Dense {
		if d.Hi > 0 {
			byName[d.Name] = append(byName[d.Name], d)
		}
	}
	for name, ds := range byName {
		slices.SortFunc(ds, func(a, b DenseEntry) int { return a.Lo - b.Lo })
		next := 0
		for _, d := range ds {
			if d.Lo != next || d.Hi < d.Lo || d.Len != ds[0].Len {
				return fmt.Errorf("%w: dense %q: range [%d, %d) of %d after %d", ErrIncomplete, name, d.Lo, d.Hi, d.Len, next)
			}
			next = d.Hi
		}
		if next != ds[0].Len {
			return fmt.Errorf("%w: dense %q: the ranges cover %d of its %d values", ErrIncomplete, name, next, ds[0].Len)
		}
	}
	return nil
}

func countFunc[T any](s []T, f func(T) bool) int {
	n := 0
	for _, x := range s {
		if f(x) {
			n++
		}
	}
	return n
}

// Manifest describes a complete snapshot. It is written last: a snapshot
// directory without a manifest does not exist.
type Manifest struct {
	Format  int       `json:"format"`
	Seq     uint64    `json:"seq"`
	Version uint64    `json:"version"` // the cluster version the snapshot was taken at
	Created time.Time `json:"created"`
	Shards  int       `json:"shards"` // how many shards wrote it
	// Job is the id of the job whose model it holds (empty in snapshots
	// written before jobs had ids): a scheduler restores only its job's.
	Job string `json:"job,omitempty"`
	// Pinned marks the job's best model so far (a worker keeping it for
	// early stopping): Prune keeps the newest pinned snapshot beyond its
	// count, and a rollback restores it.
	Pinned bool         `json:"pinned,omitempty"`
	Tables []TableEntry `json:"tables"`
	Dense  []DenseEntry `json:"dense,omitempty"`
	// Readers holds each reader stream's position (the worker's own JSON),
	// saved with the rows its batches produced.
	Readers  map[string]json.RawMessage `json:"readers,omitempty"`
	Config   json.RawMessage            `json:"config,omitempty"`
	ShardMap json.RawMessage            `json:"shard_map,omitempty"`
	// Checksum is the SHA-256 of the manifest's JSON with Checksum empty.
	Checksum string `json:"checksum"`
}

// Dir is the manifest's snapshot directory.
func (m *Manifest) Dir() string { return Dir(m.Seq) }

// compact removes the layout whitespace of the manifest's embedded JSON
// (it is written indented, for people), so that callers get it as they
// gave it. The checksum does not depend on it: json.Marshal compacts
// embedded JSON too.
func (m *Manifest) compact() {
	for i := range m.Tables {
		CompactJSON(&m.Tables[i].Spec)
	}
	for i := range m.Dense {
		CompactJSON(&m.Dense[i].Spec)
	}
	for k, v := range m.Readers {
		CompactJSON(&v)
		m.Readers[k] = v
	}
	CompactJSON(&m.Config)
	CompactJSON(&m.ShardMap)
}

// files lists every file the manifest names.
func (m *Manifest) files() []FileMeta {
	var out []FileMeta
	for _, t := range m.Tables {
		out = append(out, t.Files...)
		out = append(out, t.Admission...)
	}
	for _, d := range m.Dense {
		out = append(out, d.File)
	}
	return out
}

func (m *Manifest) sum() (string, error) {
	c := *m
	c.Checksum = ""
	return JSONSum(&c)
}

// tableBufferSize is the write buffer of a table file: pebble's writer
// hands over each 32 KiB block and its 5-byte trailer as two writes, which
// the buffer gathers into 1 MiB writes to the store.
const tableBufferSize = 1 << 20

// errAborted is what a checkedWriter's writes return after Abort.
var errAborted = errors.New("snapshot: file aborted")

// checkedWriter passes writes on to a Store Writer, counting and hashing
// them, through a buffer when it has one; it is the objstorage.Writable
// pebble's sstable writer writes to. Write and Finish may run on pebble's
// write goroutine (WriterOptions.Parallelism), Abort on the caller's: only
// aborted is shared.
type checkedWriter struct {
	w       Writer
	h       hash.Hash
	n       int64
	buf     []byte // pending bytes, already counted and hashed; nil: unbuffered
	name    string
	aborted atomic.Bool
	once    sync.Once // aborts or commits w exactly once
}

func newCheckedWriter(s Store, dir, name string, bufSize int) (*checkedWriter, error) {
	w, err := s.Create(path.Join(dir, name))
	if err != nil {
		return nil, err
	}
	c := &checkedWriter{w: w, h: crc32.New(castagnoli), name: name}
	if bufSize > 0 {
		c.buf = make([]byte, 0, bufSize)
	}
	return c, nil
}

func (c *checkedWriter) Write(p []byte) error {
	if c.aborted.Load() {
		return errAborted
	}
	c.h.Write(p)
	c.n += int64(len(p))
	if c.buf == nil {
		_, err := c.w.Write(p)
		return err
	}
	for len(p) > 0 {
		if len(c.buf) == cap(c.buf) {
			if err := c.flush(); err != nil {
				return err
			}
		}
		k := copy(c.buf[len(c.buf):cap(c.buf)], p)
		c.buf, p = c.buf[:len(c.buf)+k], p[k:]
	}
	return nil
}

func (c *checkedWriter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

func (c *checkedWriter) Finish() error {
	if c.aborted.Load() {
		c.abortStore()
		return errAborted
	}
	if err := c.flush(); err != nil {
		c.abortStore()
		return err
	}
	err := errAborted
	c.once.Do(func() { err = c.w.Commit() })
	return err
}

// Abort is the objstorage.Writable's Abort: pebble calls it on its write
// goroutine when a write failed.
func (c *checkedWriter) Abort() {
	c.aborted.Store(true)
	c.abortStore()
}

func (c *checkedWriter) abortStore() { c.once.Do(func() { c.w.Abort() }) }

func (c *checkedWriter) meta() FileMeta {
	return FileMeta{Name: c.name, Size: c.n, CRC32C: hex.EncodeToString(c.h.Sum(nil))}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checker returns the hash that f's checksum was made with, the checksum,
// and the hash's name; a FileMeta without a checksum is corrupt.
func (f FileMeta) checker() (hash.Hash, string, string, error) {
	switch {
	case f.CRC32C != "":
		return crc32.New(castagnoli), f.CRC32C, "CRC-32C", nil
	case f.SHA256 != "":
		return sha256.New(), f.SHA256, "SHA-256", nil
	}
	return nil, "", "", fmt.Errorf("%w: %s: the manifest gives no checksum", ErrCorrupt, f.Name)
}

// FilterName is the file name of shard's admission filter states of
// table: filters/NAME/shard-K.
func FilterName(table string, shard int) string {
	return fmt.Sprintf("filters/%s/shard-%05d", table, shard)
}

// TableName is the file name of shard's part of table: tables/NAME/shard-K.sst.
// A shard may write its rows as several files (TablePartName), one per
// stripe, in parallel; this one is its part 0, which every shard writes.
func TableName(table string, shard int) string {
	return fmt.Sprintf("tables/%s/shard-%05d.sst", table, shard)
}

// TablePartName is the file name of part p of shard's rows of table:
// TableName for part 0, tables/NAME/shard-K-P.sst (P in 3 digits or more)
// for the others. The parts of a shard hold disjoint rows, each part
// sorted by id.
func TablePartName(table string, shard, part int) string {
	if part == 0 {
		return TableName(table, shard)
	}
	return fmt.Sprintf("tables/%s/shard-%05d-%03d.sst", table, shard, part)
}

// TableFileShard returns the shard that wrote file name of table (a
// TablePartName), or false for a name of another form.
func TableFileShard(table, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "tables/"+table+"/shard-")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".sst")
	if !ok {
		return 0, false
	}
	shard, part, _ := strings.Cut(rest, "-")
	k, err := strconv.Atoi(shard)
	p := 0
	if err == nil && part != "" {
		p, err = strconv.Atoi(part)
	}
	if err != nil || k < 0 || p < 0 || TablePartName(table, k, p) != name {
		return 0, false // not in the canonical form
	}
	return k, true
}

// tableWriterOptions are the sstable options of table files: blocks of
// 32 KiB, not compressed (rows are mostly float32 bits, which Snappy
// barely shrinks, at a cost of about a fifth of the writer's CPU; readers
// take either), written by pebble's own goroutine while the caller adds
// the next block's rows (Parallelism).
var tableWriterOptions = sstable.WriterOptions{
	TableFormat: sstable.TableFormatPebblev2,
	BlockSize:   32 << 10,
	Compression: sstable.NoCompression,
	Parallelism: true,
}

// TableWriter writes one shard's rows of a table as a sorted table (Pebble's
// sstable format, keys the 8-byte big-endian ids).
type TableWriter struct {
	cw      *checkedWriter
	sw      *sstable.Writer
	key     [8]byte
	last    uint64
	rows    int64
	deletes int64
	done    bool
	// rowBytes > 0 writes blocks of rows (CreateBlockTableFile): the
	// open block's entries, its first and last ids.
	rowBytes            int
	blockIDs            []uint64
	blockDel            []bool
	blockRows, blockBuf []byte
}

// CreateTable starts shard's file of table in snapshot seq of s. Close or
// Abort must end it: until then the writer holds a goroutine of its own.
func CreateTable(s Store, seq uint64, table string, shard int) (*TableWriter, error) {
	return CreateTablePart(s, seq, table, shard, 0)
}

// CreateTablePart starts part p of shard's file of table in snapshot seq
// (TablePartName); CreateTable starts part 0.
func CreateTablePart(s Store, seq uint64, table string, shard, part int) (*TableWriter, error) {
	if err := checkName(table, false); err != nil || strings.Contains(table, "/") {
		return nil, fmt.Errorf("%w: table name %q", ErrBadName, table)
	}
	if shard < 0 || part < 0 {
		return nil, fmt.Errorf("%w: shard %d, part %d of table %q", ErrBadName, shard, part, table)
	}
	return CreateTableFile(s, Dir(seq), TablePartName(table, shard, part), false)
}

// CreateTableFile starts the sorted table file name (a valid name) in
// directory dir of s: CreateTable's file anywhere, for the other trees
// that keep rows in this format (model exports). With compress its blocks
// are Snappy-compressed: worth it for small rows (quantized, say), whose
// keys and 8-byte key trailers would otherwise be half the file. Close or
// Abort must end it.
func CreateTableFile(s Store, dir, name string, compress bool) (*TableWriter, error) {
	cw, err := newCheckedWriter(s, dir, name, tableBufferSize)
	if err != nil {
		return nil, err
	}
	o := tableWriterOptions
	if compress {
		o.Compression = sstable.SnappyCompression
	}
	sw := sstable.NewWriter(cw, o)
	return &TableWriter{cw: cw, sw: sw}, nil
}

// Add writes the row of id; ids (of rows and deletions together) must
// strictly increase.
func (t *TableWriter) Add(id uint64, value []byte) error {
	if err := t.order(id); err != nil {
		return err
	}
	if t.rowBytes > 0 {
		if value == nil {
			value = []byte{} // a row, not a deletion
		}
		if err := t.addToBlock(id, value); err != nil {
			return err
		}
	} else if err := t.sw.Set(t.key[:], value); err != nil {
		return fmt.Errorf("snapshot: %s: %w", t.cw.name, err)
	}
	t.rows++
	return nil
}

// Delete writes a deletion of id, a point tombstone (an export's delta
// records the rows removed since its base so): a reader reports it with
// TableReader.Deleted. Snapshots hold none. ids must strictly increase.
func (t *TableWriter) Delete(id uint64) error {
	if err := t.order(id); err != nil {
		return err
	}
	if t.rowBytes > 0 {
		if err := t.addToBlock(id, nil); err != nil {
			return err
		}
	} else if err := t.sw.Delete(t.key[:]); err != nil {
		return fmt.Errorf("snapshot: %s: %w", t.cw.name, err)
	}
	t.deletes++
	return nil
}

// order checks that id follows the last key and makes it the current key.
func (t *TableWriter) order(id uint64) error {
	if t.rows+t.deletes > 0 && id <= t.last {
		return fmt.Errorf("%w: id %d after %d", ErrOrder, id, t.last)
	}
	binary.BigEndian.PutUint64(t.key[:], id)
	t.last = id
	return nil
}

// Close finishes the file and returns its FileMeta for the manifest.
func (t *TableWriter) Close() (FileMeta, error) {
	if t.done {
		return FileMeta{}, fmt.Errorf("snapshot: %s: closed twice", t.cw.name)
	}
	t.done = true
	if err := t.flushBlock(); err != nil {
		t.sw.Close() //nolint:errcheck // the error above is the one
		return FileMeta{}, err
	}
	if err := t.sw.Close(); err != nil { // finishes the Writable, which commits the file
		return FileMeta{}, fmt.Errorf("snapshot: %s: %w", t.cw.name, err)
	}
	m := t.cw.meta()
	m.Rows, m.Deletes = t.rows, t.deletes
	if t.rowBytes > 0 {
		m.Layout, m.RowBytes = LayoutBlocks, t.rowBytes
	}
	return m, nil
}

// Abort discards the file; a no-op after Close.
func (t *TableWriter) Abort() {
	if !t.done {
		t.done = true
		// Every write fails from here on, so Close never commits; it waits
		// for the writer's goroutine, which may still be writing, and only
		// then is the store's file aborted (the Writer is not safe for
		// concurrent use).
		t.cw.aborted.Store(true)
		t.sw.Close()
		t.cw.abortStore()
	}
}

// WriteFile writes a raw file (dense parameters, say) into snapshot seq.
func WriteFile(s Store, seq uint64, name string, data []byte) (FileMeta, error) {
	return WriteFileIn(s, Dir(seq), name, data)
}

// WriteFileIn writes raw file name into directory dir of s (WriteFile's
// file anywhere: a model export's, say).
func WriteFileIn(s Store, dir, name string, data []byte) (FileMeta, error) {
	cw, err := newCheckedWriter(s, dir, name, 0)
	if err != nil {
		return FileMeta{}, err
	}
	if err := cw.Write(data); err != nil {
		cw.Abort()
		return FileMeta{}, err
	}
	if err := cw.Finish(); err != nil {
		return FileMeta{}, err
	}
	return cw.meta(), nil
}

// FileWriter streams a raw file into a snapshot (a file too large to hold
// in memory, such as a worker's SLIDE layer); Close commits it and returns
// its FileMeta, Abort drops it. Not safe for concurrent use.
type FileWriter struct{ cw *checkedWriter }

// CreateFile starts raw file name (a valid name, see "Names") in snapshot
// seq. Until Close returns nil the file does not exist under its name.
func CreateFile(s Store, seq uint64, name string) (*FileWriter, error) {
	cw, err := newCheckedWriter(s, Dir(seq), name, 1<<20)
	if err != nil {
		return nil, err
	}
	return &FileWriter{cw: cw}, nil
}

// Write implements io.Writer.
func (f *FileWriter) Write(p []byte) (int, error) {
	if err := f.cw.Write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close commits the file and returns its size and checksum.
func (f *FileWriter) Close() (FileMeta, error) {
	if err := f.cw.Finish(); err != nil {
		return FileMeta{}, err
	}
	return f.cw.meta(), nil
}

// Abort drops the file; it is a no-op after Close.
func (f *FileWriter) Abort() { f.cw.abortStore() }

// OpenFile opens raw file f of snapshot seq for a sequential read that
// checks f's size and checksum: the reader's Read returns an error wrapping
// ErrCorrupt instead of io.EOF when the bytes do not match. The caller
// closes it.
func OpenFile(s Store, seq uint64, f FileMeta) (io.ReadCloser, error) {
	return OpenFileIn(s, Dir(seq), f)
}

// OpenFileIn is OpenFile for file f of directory dir.
func OpenFileIn(s Store, dir string, f FileMeta) (io.ReadCloser, error) {
	r, err := s.Open(path.Join(dir, f.Name))
	if err != nil {
		return nil, err
	}
	if r.Size() != f.Size {
		r.Close()
		return nil, fmt.Errorf("%w: %s: %d bytes, manifest says %d", ErrCorrupt, f.Name, r.Size(), f.Size)
	}
	h, want, kind, err := f.checker()
	if err != nil {
		r.Close()
		return nil, err
	}
	return &verifiedFile{r: r, sec: io.NewSectionReader(r, 0, f.Size), h: h, want: want, kind: kind, meta: f}, nil
}

// verifiedFile hashes what it reads and checks the sum at the end.
type verifiedFile struct {
	r          Reader
	sec        *io.SectionReader
	h          hash.Hash
	want, kind string // the checksum and its hash's name
	meta       FileMeta
}

func (v *verifiedFile) Read(p []byte) (int, error) {
	n, err := v.sec.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want {
			return n, fmt.Errorf("%w: %s: %s %s, manifest says %s", ErrCorrupt, v.meta.Name, v.kind, got, v.want)
		}
	}
	return n, err
}

func (v *verifiedFile) Close() error { return v.r.Close() }

// Commit writes m's manifest (with Format and Checksum filled) into its
// snapshot's directory: the snapshot then exists. Every file m names must
// already be committed.
func Commit(s Store, m *Manifest) error {
	m.Format = FormatVersion
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	sum, err := m.sum()
	if err != nil {
		return fmt.Errorf("snapshot: manifest: %w", err)
	}
	m.Checksum = sum
	return CommitJSON(s, path.Join(m.Dir(), ManifestName), m)
}

// ReadManifest reads and checks the manifest of snapshot seq (not its
// files: see Verify). A missing, truncated or altered manifest is an error
// wrapping ErrCorrupt.
func ReadManifest(s Store, seq uint64) (*Manifest, error) {
	var m Manifest
	if err := ReadJSON(s, path.Join(Dir(seq), ManifestName), &m); err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", ErrCorrupt, Dir(seq), ManifestName, err)
	}
	m.compact()
	switch sum, err := m.sum(); {
	case err != nil:
		return nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, Dir(seq), ManifestName, err)
	case m.Format < oldestFormat || m.Format > FormatVersion:
		return nil, fmt.Errorf("%w: %s: manifest format %d, this build reads %d to %d", ErrCorrupt, Dir(seq), m.Format, oldestFormat, FormatVersion)
	case sum != m.Checksum:
		return nil, fmt.Errorf("%w: %s/%s: checksum %s, want %s", ErrCorrupt, Dir(seq), ManifestName, sum, m.Checksum)
	case m.Seq != seq:
		return nil, fmt.Errorf("%w: %s: manifest says snapshot %d", ErrCorrupt, Dir(seq), m.Seq)
	}
	return &m, nil
}

// Verify reads every file m names and checks its size and checksum.
func Verify(s Store, m *Manifest) error { return VerifyFiles(s, m.Dir(), m.files()) }

// VerifyFiles reads every file of files in directory dir and checks its
// size and checksum; the error (wrapping ErrCorrupt) is that of the first
// bad file in the order of files.
func VerifyFiles(s Store, dir string, files []FileMeta) error {
	// The files are checked on up to GOMAXPROCS goroutines (hashing is
	// CPU-bound: 0.7 CPU-s for 10M rows).
	errs := make([]error, len(files))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				errs[i] = verifyFile(s, dir, files[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func verifyFile(s Store, dir string, f FileMeta) error {
	r, err := s.Open(path.Join(dir, f.Name))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	defer r.Close()
	h, want, kind, err := f.checker()
	if err != nil {
		return fmt.Errorf("%w (in %s)", err, dir)
	}
	n, err := io.Copy(h, r)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s/%s: %w", ErrCorrupt, dir, f.Name, err)
	case n != f.Size:
		return fmt.Errorf("%w: %s/%s: %d bytes, the manifest says %d", ErrCorrupt, dir, f.Name, n, f.Size)
	case hex.EncodeToString(h.Sum(nil)) != want:
		return fmt.Errorf("%w: %s/%s: %s does not match the manifest", ErrCorrupt, dir, f.Name, kind)
	}
	return nil
}

// Snapshots returns the sequence numbers of the snapshot directories in s,
// newest first, whether complete or not.
func Snapshots(s Store) ([]uint64, error) {
	seqs, err := SeqDirs(s, dirPrefix)
	slices.Reverse(seqs)
	return seqs, err
}

// Latest returns the newest snapshot whose manifest and files are intact
// (verified in full), and the errors of the newer ones it passed over
// (incomplete or corrupt: each wraps ErrCorrupt). With none intact the
// error wraps ErrNoSnapshot and names each refusal.
func Latest(s Store) (*Manifest, []error, error) {
	seqs, err := Snapshots(s)
	if err != nil {
		return nil, nil, err
	}
	var skipped []error
	for _, seq := range seqs {
		m, err := ReadManifest(s, seq)
		if err == nil {
			err = Verify(s, m)
		}
		if err == nil {
			return m, skipped, nil
		}
		skipped = append(skipped, err)
	}
	return nil, skipped, fmt.Errorf("%w in %s: %w", ErrNoSnapshot, s, errors.Join(skipped...))
}

// Prune keeps the newest keep complete snapshots (those with a manifest)
// and the newest pinned one (Manifest.Pinned) on top of them when it is
// older, and removes the other older ones, and every incomplete snapshot older than the
// newest complete one (a failed or abandoned attempt; newer incomplete
// ones may still be being written). It returns the removed sequence
// numbers.
func Prune(s Store, keep int) ([]uint64, error) {
	if keep < 1 {
		return nil, fmt.Errorf("snapshot: prune: keep %d, want at least 1", keep)
	}
	seqs, err := Snapshots(s)
	if err != nil {
		return nil, err
	}
	var removed []uint64
	complete, pinned := 0, false
	for _, seq := range seqs {
		m, err := ReadManifest(s, seq)
		if err == nil {
			complete++
			if complete <= keep || m.Pinned && !pinned {
				pinned = pinned || m.Pinned
				continue
			}
		} else if complete == 0 {
			continue // newer than every complete one: maybe in progress
		}
		if err := s.Remove(Dir(seq)); err != nil {
			return removed, err
		}
		removed = append(removed, seq)
	}
	return removed, nil
}

// RemoveAfter removes every snapshot after seq (complete or not): a
// rollback to seq discarded the model they hold. It returns the removed
// sequence numbers.
func RemoveAfter(s Store, seq uint64) ([]uint64, error) {
	seqs, err := Snapshots(s)
	if err != nil {
		return nil, err
	}
	var removed []uint64
	for _, n := range seqs {
		if n <= seq {
			continue
		}
		if err := s.Remove(Dir(n)); err != nil {
			return removed, err
		}
		removed = append(removed, n)
	}
	return removed, nil
}

// RemoveIncomplete removes every snapshot without a readable manifest:
// attempts that failed, or that a scheduler no longer leading abandoned
// (a new leader calls it; files a shard writes into such a directory
// afterwards are removed by the next Prune). It returns the removed
// sequence numbers.
func RemoveIncomplete(s Store) ([]uint64, error) {
	seqs, err := Snapshots(s)
	if err != nil {
		return nil, err
	}
	var removed []uint64
	for _, seq := range seqs {
		if _, err := ReadManifest(s, seq); err == nil {
			continue
		}
		if err := s.Remove(Dir(seq)); err != nil {
			return removed, err
		}
		removed = append(removed, seq)
	}
	return removed, nil
}

// TableReader reads a table file of a snapshot in id order.
type TableReader struct {
	r    *sstable.Reader
	it   sstable.Iterator
	name string
	err  error
	id   uint64
	val  []byte
	del  bool
	seek bool
	// rowBytes > 0 reads blocks of rows (LayoutBlocks): blk is the
	// current one.
	rowBytes  int
	blk       block
	blockSeen bool
}

// readable adapts a Store Reader to objstorage.Readable.
type readable struct{ r Reader }

func (r readable) ReadAt(_ context.Context, p []byte, off int64) error {
	n, err := r.r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
func (r readable) Close() error { return r.r.Close() }
func (r readable) Size() int64  { return r.r.Size() }
func (r readable) NewReadHandle(context.Context) objstorage.ReadHandle {
	h := objstorage.MakeNoopReadHandle(r)
	return &h
}

// OpenTable opens file f of snapshot seq for reading. Call Verify first to
// refuse a damaged file as a whole; the sorted table's own block checksums
// catch damage as it is read.
func OpenTable(s Store, seq uint64, f FileMeta) (*TableReader, error) {
	return OpenTableFile(s, Dir(seq), f)
}

// OpenTableFile opens table file f of directory dir (CreateTableFile).
func OpenTableFile(s Store, dir string, f FileMeta) (*TableReader, error) {
	name := path.Join(dir, f.Name)
	r, err := s.Open(name)
	if err != nil {
		return nil, err
	}
	sr, err := openSSTable(r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	it, err := sr.NewIter(nil, nil)
	if err != nil {
		sr.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
	}
	t := &TableReader{r: sr, it: it, name: name, seek: true}
	switch f.Layout {
	case "":
	case LayoutBlocks:
		if f.RowBytes <= 0 {
			t.Close()
			return nil, fmt.Errorf("%w: %s: blocks of rows of %d bytes", ErrCorrupt, name, f.RowBytes)
		}
		t.rowBytes = f.RowBytes
	default:
		t.Close()
		return nil, fmt.Errorf("%w: %s: unknown layout %q (a newer writer's?)", ErrCorrupt, name, f.Layout)
	}
	return t, nil
}

// openSSTable opens the sstable of r. Pebble's reader panics on some
// corrupt footers (a block handle's length past the footer: slice bounds
// out of range, found by FuzzTableReader); such a panic is the file's
// corruption, returned as an error.
func openSSTable(r Reader) (sr *sstable.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			sr, err = nil, fmt.Errorf("the sstable reader failed on it: %v", p)
		}
	}()
	return sstable.NewReader(readable{r}, sstable.ReaderOptions{})
}

// step calls next (the iterator's First or Next), a panic of pebble's on
// a corrupt block being the file's corruption (ok false, t.err set). V is
// pebble's lazy value type, which its internal package declares.
func step[V any](t *TableReader, next func() (*sstable.InternalKey, V)) (k *sstable.InternalKey, lv V, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			k, ok = nil, false
			t.err = fmt.Errorf("%w: %s: the sstable reader failed on it: %v", ErrCorrupt, t.name, p)
		}
	}()
	k, lv = next()
	return k, lv, true
}

// Next moves to the next row and reports whether there is one; after
// false, Err tells whether the end was reached or reading failed.
func (t *TableReader) Next() bool {
	if t.err != nil {
		return false
	}
	if t.rowBytes > 0 && t.nextInBlock() {
		return true
	}
	next := t.it.Next
	if t.seek {
		next, t.seek = t.it.First, false
	}
	k, lv, ok := step(t, next)
	if !ok {
		return false
	}
	if k == nil {
		if err := t.it.Error(); err != nil {
			t.err = fmt.Errorf("%w: %s: %w", ErrCorrupt, t.name, err)
		}
		return false
	}
	if len(k.UserKey) != 8 {
		t.err = fmt.Errorf("%w: %s: key of %d bytes", ErrCorrupt, t.name, len(k.UserKey))
		return false
	}
	last, after := t.id, t.blockSeen
	t.id, t.del = binary.BigEndian.Uint64(k.UserKey), false
	switch k.Kind() {
	case sstable.InternalKeyKindSet:
		v, _, err := lv.Value(nil)
		if err != nil {
			t.err = fmt.Errorf("%w: %s: %w", ErrCorrupt, t.name, err)
			return false
		}
		t.val = v
		if t.rowBytes > 0 {
			if err := decodeBlock(&t.blk, t.id, v, t.rowBytes, last, after); err != nil {
				t.err = fmt.Errorf("%w: %s: block at id %d: %w", ErrCorrupt, t.name, t.id, err)
				return false
			}
			t.blockSeen = true
			return t.nextInBlock()
		}
	case sstable.InternalKeyKindDelete:
		if t.rowBytes > 0 {
			t.err = fmt.Errorf("%w: %s: a tombstone among blocks", ErrCorrupt, t.name)
			return false
		}
		t.val, t.del = nil, true
	default:
		t.err = fmt.Errorf("%w: %s: key %d of kind %v", ErrCorrupt, t.name, t.id, k.Kind())
		return false
	}
	return true
}

// Row returns the current row's id and value; the value is valid until
// the next call of Next. A deletion (Deleted) has no value.
func (t *TableReader) Row() (uint64, []byte) { return t.id, t.val }

// Deleted reports whether the current key is a deletion
// (TableWriter.Delete), not a row.
func (t *TableReader) Deleted() bool { return t.del }

// Err returns the error that ended Next, or nil at the end of the file.
func (t *TableReader) Err() error { return t.err }

// Close releases the file.
func (t *TableReader) Close() error {
	err := t.it.Close()
	if cerr := t.r.Close(); err == nil {
		err = cerr
	}
	return err
}
