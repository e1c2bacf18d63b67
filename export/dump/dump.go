package dump

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	"unsafe"

	"gopkg.in/yaml.v3"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/snapshot"
)

// Version is the dump format's version.
const Version = 1

// Model is an export chain read into memory.
type Model struct {
	// Last is the chain's last export's manifest (its config and shape);
	// Chain the chain's exports, the full one first.
	Last  *export.Manifest
	Chain []uint64
	// Tables hold each table's rows, in the manifest's table order.
	Tables []Table
	// Dense holds the last export's dense vectors, in its order.
	Dense []Dense
	// Network describes the model's network (model/ctr), as serve builds
	// it from the last export's config and shape.
	Network ctr.Spec
}

// Table is a table's rows: IDs in increasing order, row i's values
// Values[i*Dim:(i+1)*Dim].
type Table struct {
	export.Table
	IDs    []uint64
	Values []float32
}

// Dense is a dense vector.
type Dense struct {
	Name   string
	Values []float32
}

// Load reads the chain a reader holding nothing would apply from s (see
// export.Next): the full export's rows, each delta's rows and deletions
// applied in order, and the last export's dense vectors.
func Load(s snapshot.Store) (*Model, error) {
	ms, _, err := export.Next(s, nil)
	if err != nil {
		return nil, err
	}
	last := ms[len(ms)-1]
	m := &Model{Last: last}
	if m.Network, err = network(last); err != nil {
		return nil, err
	}
	for _, e := range ms {
		m.Chain = append(m.Chain, e.Seq)
	}
	for _, t := range last.Tables {
		tab, err := loadTable(s, ms, t)
		if err != nil {
			return nil, err
		}
		m.Tables = append(m.Tables, tab)
	}
	for _, d := range last.Dense {
		v, err := export.ReadDense(s, last, d.Name)
		if err != nil {
			return nil, err
		}
		m.Dense = append(m.Dense, Dense{Name: d.Name, Values: v})
	}
	return m, nil
}

// network describes the network of export m (as serve builds it).
func network(m *export.Manifest) (ctr.Spec, error) {
	cfg, net, err := ctr.NetOf(m.Config, m.Shape)
	if err != nil {
		return ctr.Spec{}, fmt.Errorf("export %d: %w", m.Seq, err)
	}
	return net.Spec(cfg), nil
}

// loadTable reads table t's rows along chain ms: the full export's
// files (each in id order, the shards' ids disjoint) merged, then each
// delta's merged into them (a row replaces or adds one, a deletion
// removes one). Each export's files are read at once, one goroutine a
// file.
func loadTable(s snapshot.Store, ms []*export.Manifest, t export.Table) (Table, error) {
	var cur run
	for i, e := range ms {
		if !slices.ContainsFunc(e.Tables, func(x export.Table) bool { return x.Name == t.Name }) {
			continue // a delta that changed nothing of t
		}
		runs, err := readRuns(s, e, t.Name, t.Dim)
		if err != nil {
			return Table{}, fmt.Errorf("export %d, table %q: %w", e.Seq, t.Name, err)
		}
		d := mergeRuns(runs, t.Dim)
		if i == 0 {
			cur = d
		} else {
			cur = applyDelta(cur, d, t.Dim)
		}
	}
	out := Table{Table: t, IDs: cur.ids, Values: cur.vals}
	out.Files = nil
	return out, nil
}

// run is rows in increasing id order: row i's id ids[i], its values
// vals[i*dim:(i+1)*dim], or a deletion (del[i], its values zeros; del is
// nil in a chain applied, which holds no deletion).
type run struct {
	ids  []uint64
	vals []float32
	del  []bool
}

// readRuns reads each file of table name in export m, at once, into a
// run of its own.
func readRuns(s snapshot.Store, m *export.Manifest, name string, dim int) ([]run, error) {
	i := slices.IndexFunc(m.Tables, func(x export.Table) bool { return x.Name == name })
	files := m.Tables[i].Files
	runs := make([]run, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for f := range files {
		wg.Go(func() {
			r, err := export.OpenTableFile(s, m, name, f)
			if err != nil {
				errs[f] = err
				return
			}
			defer r.Close()
			out := run{ids: make([]uint64, 0, files[f].Rows), vals: make([]float32, 0, int(files[f].Rows)*dim)}
			zeros := make([]float32, dim)
			for r.Next() {
				id, v := r.Row()
				out.del = append(out.del, v == nil)
				if v == nil {
					v = zeros
				}
				out.ids, out.vals = append(out.ids, id), append(out.vals, v...)
			}
			runs[f], errs[f] = out, r.Err()
		})
	}
	wg.Wait()
	return runs, errors.Join(errs...)
}

// mergeRuns merges runs of disjoint ids into one run in id order.
func mergeRuns(runs []run, dim int) run {
	if len(runs) == 1 {
		return runs[0]
	}
	n := 0
	for _, r := range runs {
		n += len(r.ids)
	}
	out := run{ids: make([]uint64, 0, n), vals: make([]float32, 0, n*dim), del: make([]bool, 0, n)}
	at := make([]int, len(runs))
	for len(out.ids) < n {
		best := -1
		for k, r := range runs {
			if at[k] < len(r.ids) && (best < 0 || r.ids[at[k]] < runs[best].ids[at[best]]) {
				best = k
			}
		}
		r, i := &runs[best], at[best]
		out.ids, out.vals = append(out.ids, r.ids[i]), append(out.vals, r.vals[i*dim:(i+1)*dim]...)
		out.del = append(out.del, r.del[i])
		at[best]++
	}
	return out
}

// applyDelta returns base with delta d applied: d's rows replace or join
// base's, d's deletions remove them.
func applyDelta(base, d run, dim int) run {
	out := run{ids: make([]uint64, 0, len(base.ids)+len(d.ids)), vals: make([]float32, 0, len(base.vals)+len(d.vals))}
	i, j := 0, 0
	for i < len(base.ids) || j < len(d.ids) {
		switch {
		case j == len(d.ids) || i < len(base.ids) && base.ids[i] < d.ids[j]:
			out.ids, out.vals = append(out.ids, base.ids[i]), append(out.vals, base.vals[i*dim:(i+1)*dim]...)
			i++
		default:
			if i < len(base.ids) && base.ids[i] == d.ids[j] {
				i++ // replaced or deleted
			}
			if !d.del[j] {
				out.ids, out.vals = append(out.ids, d.ids[j]), append(out.vals, d.vals[j*dim:(j+1)*dim]...)
			}
			j++
		}
	}
	return out
}

// header is the dump's first line (see the package doc).
type header struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	Store   string          `json:"store"`
	Seq     uint64          `json:"seq"`
	Full    uint64          `json:"full"`
	Chain   []uint64        `json:"chain"`
	Job     string          `json:"job,omitempty"`
	Samples int64           `json:"samples"`
	Created time.Time       `json:"created"`
	Config  json.RawMessage `json:"config,omitempty"`
	Shape   json.RawMessage `json:"shape,omitempty"`
	Network ctr.Spec        `json:"network"`
	Tables  []tableHeader   `json:"tables"`
	Dense   []denseHeader   `json:"dense"`
	Arrays  []array         `json:"arrays"`
}

type tableHeader struct {
	Name  string          `json:"name"`
	Dim   int             `json:"dim"`
	Quant string          `json:"quant"`
	Rows  int             `json:"rows"`
	Init  json.RawMessage `json:"init,omitempty"`
}

type denseHeader struct {
	Name string `json:"name"`
	Len  int    `json:"len"`
}

type array struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

// Write writes m in the dump format to w; store names where it came
// from.
func (m *Model) Write(w io.Writer, store string) error {
	h := header{Format: "xps-export-dump", Version: Version, Store: store, Seq: m.Last.Seq, Full: m.Last.Full,
		Chain: m.Chain, Job: m.Last.Job, Samples: m.Last.Samples, Created: m.Last.Created,
		Config: m.Last.Config, Shape: m.Last.Shape, Network: m.Network, Tables: []tableHeader{}, Dense: []denseHeader{}}
	for _, t := range m.Tables {
		h.Tables = append(h.Tables, tableHeader{Name: t.Name, Dim: t.Dim, Quant: t.Quant, Rows: len(t.IDs), Init: t.Init})
		h.Arrays = append(h.Arrays, array{"tables/" + t.Name + "/ids", "<u8", []int{len(t.IDs)}},
			array{"tables/" + t.Name + "/values", "<f4", []int{len(t.IDs), t.Dim}})
	}
	for _, d := range m.Dense {
		h.Dense = append(h.Dense, denseHeader{Name: d.Name, Len: len(d.Values)})
		h.Arrays = append(h.Arrays, array{"dense/" + d.Name, "<f4", []int{len(d.Values)}})
	}
	var err error
	if h.Config, err = yamlKeyed(m.Last.Config); err != nil {
		return err
	}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(append(b, '\n')) //nolint:errcheck // the Flush's error
	for _, t := range m.Tables {
		writeLE(bw, t.IDs)
		writeLE(bw, t.Values)
	}
	for _, d := range m.Dense {
		writeLE(bw, d.Values)
	}
	return bw.Flush()
}

// yamlKeyed returns the manifest's config (config.Config's JSON, keyed
// by the Go fields' names) keyed as the YAML file is (train.batch_size),
// as its readers know it.
func yamlKeyed(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var c config.Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("the export's config: %w", err)
	}
	y, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := yaml.Unmarshal(y, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// writeLE writes v's values little-endian: its memory as it is on a
// little-endian machine, encoded on another.
func writeLE[T uint64 | float32](w io.Writer, v []T) {
	if len(v) == 0 {
		return
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))) //nolint:errcheck // kept by the bufio.Writer
		return
	}
	binary.Write(w, binary.LittleEndian, v) //nolint:errcheck // kept by the bufio.Writer
}
