package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"time"

	"github.com/xdlgo/xps/snapshot"
)

// FormatVersion is the manifest format this build writes: 2 names each
// file's CRC-32C, 1 (still read) its SHA-256 (see snapshot.FileMeta).
const FormatVersion = 2

// oldestFormat is the oldest manifest format this build reads.
const oldestFormat = 1

// ManifestName is the manifest's file name in an export's directory.
const ManifestName = "manifest.json"

// The kinds of export.
const (
	KindFull  = "full"  // every row of every table
	KindDelta = "delta" // the rows changed and removed since the base
)

// ErrCorrupt is wrapped by the errors of a missing, short or altered
// manifest or file, and of a broken chain.
var ErrCorrupt = errors.New("export: corrupt export")

// ErrIncomplete is wrapped by ReadManifest's error for an export whose
// manifest is not there (yet): the manifest is written last, so the
// export is being written, or its write was abandoned. Such an error
// matches ErrCorrupt too (the export cannot be used), but says neither.
var ErrIncomplete = errors.New("export: export being written")

// incompleteError is ReadManifest's error for an export without a
// manifest: it matches ErrIncomplete and ErrCorrupt.
type incompleteError struct{ dir string }

func (e *incompleteError) Error() string {
	return fmt.Sprintf("export: %s: no %s yet: the export is being written (or its write was abandoned)", e.dir, ManifestName)
}

func (e *incompleteError) Unwrap() []error { return []error{ErrIncomplete, ErrCorrupt} }

// ErrNoExport is wrapped by Chain's error when the store holds no intact
// full export.
var ErrNoExport = errors.New("export: no intact full export")

// dirPrefix begins the name of an export's directory.
const dirPrefix = "exp-"

// Dir returns the directory of export seq: "exp-" and seq in 20 digits,
// so that names sort as the sequence numbers do (snapshot.SeqDir).
func Dir(seq uint64) string { return snapshot.SeqDir(dirPrefix, seq) }

// TableName is the file name of shard's part of table in an export.
func TableName(table string, shard int) string {
	return fmt.Sprintf("tables/%s/shard-%05d.sst", table, shard)
}

// DenseName is the file name of shard's range of a dense vector.
func DenseName(name string, shard int) string {
	return fmt.Sprintf("dense/%s/shard-%05d", name, shard)
}

// Table is a sparse table in an export.
type Table struct {
	Name string `json:"name"`
	Dim  int    `json:"dim"`
	// Quant is the rows' encoding (FP32, FP16 or Int8).
	Quant string `json:"quant"`
	// Init is the table's initializer (ams.InitSpec as JSON): the value
	// of an ID the chain holds no row of.
	Init json.RawMessage `json:"init,omitempty"`
	// Files holds one sorted table per shard: rows (and, in a delta,
	// deletions: the tombstones of rows removed since the base) keyed by
	// the ids' 8 big-endian bytes, values encoded by Quant.
	Files []snapshot.FileMeta `json:"files"`
}

// Dense is a dense parameter vector in an export, Len values held in
// ranges by the shards: the ranges of Parts follow each other from 0 to
// Len.
type Dense struct {
	Name  string      `json:"name"`
	Len   int         `json:"len"`
	Parts []DensePart `json:"parts"`
}

// DensePart is the range [Lo, Hi) of a dense vector: Hi-Lo float32
// values, little-endian.
type DensePart struct {
	Lo   int               `json:"lo"`
	Hi   int               `json:"hi"`
	File snapshot.FileMeta `json:"file"`
}

// Part is what one shard wrote of an export: its file of each table and
// its ranges of the dense vectors.
type Part struct {
	Tables []Table `json:"tables"`
	Dense  []Dense `json:"dense,omitempty"`
}

// Add merges p, the part of shard m.Shards (parts are added in shard
// order), into m: a table's file joins its entry, a dense range its
// vector's. Tables whose dim, encoding or initializer differ between
// shards are an error.
func (m *Manifest) Add(p Part) error {
	for _, t := range p.Tables {
		if len(t.Files) != 1 {
			return fmt.Errorf("export: shard %d's part of table %q has %d files, want 1", m.Shards, t.Name, len(t.Files))
		}
		i := slices.IndexFunc(m.Tables, func(e Table) bool { return e.Name == t.Name })
		switch {
		case i < 0 && m.Shards == 0:
			m.Tables = append(m.Tables, t)
		case i < 0:
			return fmt.Errorf("export: table %q is on shard %d and not on shard 0", t.Name, m.Shards)
		case m.Tables[i].Dim != t.Dim || m.Tables[i].Quant != t.Quant || !bytes.Equal(m.Tables[i].Init, t.Init):
			return fmt.Errorf("export: table %q differs between shards 0 and %d", t.Name, m.Shards)
		default:
			m.Tables[i].Files = append(m.Tables[i].Files, t.Files[0])
		}
	}
	for _, d := range p.Dense {
		i := slices.IndexFunc(m.Dense, func(e Dense) bool { return e.Name == d.Name })
		if i < 0 {
			m.Dense = append(m.Dense, d)
		} else if m.Dense[i].Len != d.Len {
			return fmt.Errorf("export: dense %q has %d values on one shard, %d on shard %d", d.Name, m.Dense[i].Len, d.Len, m.Shards)
		} else {
			m.Dense[i].Parts = append(m.Dense[i].Parts, d.Parts...)
		}
	}
	m.Shards++
	return nil
}

// Manifest describes a complete export; it is written last, and an export
// directory without one does not exist.
type Manifest struct {
	Format int    `json:"format"`
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	// Base is the export a delta applies onto (the previous link of its
	// chain); Full the full export its chain starts at (Seq for a full).
	Base uint64 `json:"base,omitempty"`
	Full uint64 `json:"full"`
	// Job is the id of the training job, Version the cluster version at
	// the cut, Samples the samples the model had trained then.
	Job     string    `json:"job,omitempty"`
	Version uint64    `json:"version"`
	Samples int64     `json:"samples"`
	Created time.Time `json:"created"`
	Shards  int       `json:"shards"`
	Tables  []Table   `json:"tables"`
	Dense   []Dense   `json:"dense,omitempty"`
	// Config is the job's configuration (config.Config as JSON), from
	// which a server rebuilds the network.
	Config json.RawMessage `json:"config,omitempty"`
	// Shape is the network's input shape as the workers found it in the
	// data (fields, their levels, dense widths: the worker's JSON), which
	// the configuration may leave to the data.
	Shape json.RawMessage `json:"shape,omitempty"`
	// Checksum is the SHA-256 of the manifest's JSON with Checksum empty.
	Checksum string `json:"checksum"`
}

// Dir is the manifest's export directory.
func (m *Manifest) Dir() string { return Dir(m.Seq) }

// Rows returns the rows and the deletions the manifest's files hold.
func (m *Manifest) Rows() (rows, deletes int64) {
	for _, t := range m.Tables {
		for _, f := range t.Files {
			rows, deletes = rows+f.Rows, deletes+f.Deletes
		}
	}
	return rows, deletes
}

// Bytes returns the size of the manifest's files.
func (m *Manifest) Bytes() int64 {
	var n int64
	for _, f := range m.files() {
		n += f.Size
	}
	return n
}

func (m *Manifest) files() []snapshot.FileMeta {
	var out []snapshot.FileMeta
	for _, t := range m.Tables {
		out = append(out, t.Files...)
	}
	for _, d := range m.Dense {
		for _, p := range d.Parts {
			out = append(out, p.File)
		}
	}
	return out
}

func (m *Manifest) sum() (string, error) {
	c := *m
	c.Checksum = ""
	return snapshot.JSONSum(&c)
}

// maxDim bounds a table's dim: ams.MaxDim, the widest row a table has.
const maxDim = 1 << 16

// check reports what is wrong with a manifest's structure.
func (m *Manifest) check() error {
	switch {
	case m.Kind == KindFull && (m.Full != m.Seq || m.Base != 0):
		return fmt.Errorf("a full export with full %d and base %d", m.Full, m.Base)
	case m.Kind == KindDelta && (m.Base >= m.Seq || m.Full > m.Base):
		return fmt.Errorf("a delta with base %d and full %d", m.Base, m.Full)
	case m.Kind != KindFull && m.Kind != KindDelta:
		return fmt.Errorf("kind %q", m.Kind)
	}
	for _, t := range m.Tables {
		if err := CheckQuant(t.Quant); err != nil || t.Dim < 1 || t.Dim > maxDim || len(t.Files) != m.Shards {
			return fmt.Errorf("table %q: quant %q, dim %d, %d files of %d shards", t.Name, t.Quant, t.Dim, len(t.Files), m.Shards)
		}
	}
	for _, d := range m.Dense {
		next := 0
		for _, p := range d.Parts {
			if p.Lo != next || p.Hi < p.Lo || p.Hi-p.Lo > math.MaxInt64/4 || p.File.Size != 4*int64(p.Hi-p.Lo) {
				return fmt.Errorf("dense %q: range [%d, %d) of %d bytes after %d", d.Name, p.Lo, p.Hi, p.File.Size, next)
			}
			next = p.Hi
		}
		if next != d.Len {
			return fmt.Errorf("dense %q: ranges end at %d of %d", d.Name, next, d.Len)
		}
	}
	return nil
}

// Commit writes m's manifest (Format, Created and Checksum filled) into
// its export's directory: the export then exists. Every file m names
// must already be committed.
func Commit(s snapshot.Store, m *Manifest) error {
	m.Format = FormatVersion
	if m.Created.IsZero() {
		m.Created = time.Now().UTC()
	}
	if err := m.check(); err != nil {
		return fmt.Errorf("export %d: %w", m.Seq, err)
	}
	sum, err := m.sum()
	if err != nil {
		return fmt.Errorf("export %d: manifest: %w", m.Seq, err)
	}
	m.Checksum = sum
	return snapshot.CommitJSON(s, path.Join(m.Dir(), ManifestName), m)
}

// ReadManifest reads and checks the manifest of export seq (not its files:
// see Verify). A truncated or altered manifest is an error wrapping
// ErrCorrupt; a missing one wraps ErrIncomplete (and ErrCorrupt).
func ReadManifest(s snapshot.Store, seq uint64) (*Manifest, error) {
	var m Manifest
	if err := snapshot.ReadJSON(s, path.Join(Dir(seq), ManifestName), &m); errors.Is(err, fs.ErrNotExist) {
		return nil, &incompleteError{dir: Dir(seq)}
	} else if err != nil {
		return nil, fmt.Errorf("%w: %s/%s: %w", ErrCorrupt, Dir(seq), ManifestName, err)
	}
	snapshot.CompactJSON(&m.Config)
	snapshot.CompactJSON(&m.Shape)
	for i := range m.Tables {
		snapshot.CompactJSON(&m.Tables[i].Init)
	}
	switch sum, err := m.sum(); {
	case err != nil:
		return nil, fmt.Errorf("%w: %s/%s: %v", ErrCorrupt, Dir(seq), ManifestName, err)
	case m.Format < oldestFormat || m.Format > FormatVersion:
		return nil, fmt.Errorf("%w: %s: manifest format %d, this build reads %d to %d", ErrCorrupt, Dir(seq), m.Format, oldestFormat, FormatVersion)
	case sum != m.Checksum:
		return nil, fmt.Errorf("%w: %s/%s: checksum %s, want %s", ErrCorrupt, Dir(seq), ManifestName, sum, m.Checksum)
	case m.Seq != seq:
		return nil, fmt.Errorf("%w: %s: the manifest says export %d", ErrCorrupt, Dir(seq), m.Seq)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, Dir(seq), err)
	}
	return &m, nil
}

// Verify reads every file m names and checks its size and checksum.
func Verify(s snapshot.Store, m *Manifest) error {
	if err := snapshot.VerifyFiles(s, m.Dir(), m.files()); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

// Exports returns the sequence numbers of the export directories in s,
// oldest first, whether complete or not.
func Exports(s snapshot.Store) ([]uint64, error) { return snapshot.SeqDirs(s, dirPrefix) }
