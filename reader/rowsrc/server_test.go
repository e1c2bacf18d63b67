package rowsrc_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"math"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/xdlgo/xps/reader/rowsrc"
)

// col is a test table's column: its wire description and values (ints,
// floats or strings, by type), and nulls by row.
type col struct {
	rowsrc.Column
	ints   []int64
	floats []float64
	strs   []string
	nulls  map[int]bool
}

// table is a test table.
type table struct {
	rows int
	cols []col
}

// server speaks the row service protocol over a Unix socket for the
// tests: a peer written from the package doc, as the Python package's
// is. Its hooks make it misbehave.
type server struct {
	path   string
	ln     net.Listener
	tables map[string]table
	// batch, when set, may rewrite a batch header before it is sent.
	batch func(h map[string]any)
	// schema, when set, may rewrite a schema before it is sent.
	schema func(s map[string]any)
	// requests counts the row requests served.
	mu       sync.Mutex
	requests int
	wg       sync.WaitGroup
}

func newServer(t *testing.T, tables map[string]table) *server {
	t.Helper()
	s := &server{path: filepath.Join(t.TempDir(), "rows.sock"), tables: tables}
	ln, err := net.Listen("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *server) serve(c net.Conn) {
	defer c.Close()
	br, bw := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			Table  string
			Schema bool
			Rows   []int64
		}
		if json.Unmarshal(line, &req) != nil {
			return
		}
		t, ok := s.tables[req.Table]
		switch {
		case !ok:
			writeJSON(bw, map[string]any{"error": "no table " + req.Table})
		case req.Schema:
			s.writeSchema(bw, req.Table, t)
		default:
			s.mu.Lock()
			s.requests++
			s.mu.Unlock()
			s.writeRows(bw, t, req.Rows[0], req.Rows[1])
		}
		if bw.Flush() != nil {
			return
		}
	}
}

func writeJSON(w *bufio.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
}

func (s *server) writeSchema(w *bufio.Writer, name string, t table) {
	var cols []rowsrc.Column
	for _, c := range t.cols {
		if c.Type == rowsrc.TypeDict {
			c.DictLen = int64(len(c.strs))
			for _, e := range c.strs {
				c.DictBytes += int64(len(e))
			}
		}
		cols = append(cols, c.Column)
	}
	var m map[string]any
	b, _ := json.Marshal(rowsrc.Schema{Version: rowsrc.Version, Table: name, Rows: int64(t.rows), Columns: cols})
	json.Unmarshal(b, &m)
	if s.schema != nil {
		s.schema(m)
	}
	writeJSON(w, m)
	for _, c := range t.cols {
		if c.Type != rowsrc.TypeDict {
			continue
		}
		off := int64(0)
		w.Write(binary.LittleEndian.AppendUint64(nil, 0))
		for _, e := range c.strs {
			off += int64(len(e))
			w.Write(binary.LittleEndian.AppendUint64(nil, uint64(off)))
		}
		for _, e := range c.strs {
			w.WriteString(e)
		}
	}
}

func (s *server) writeRows(w *bufio.Writer, t table, from, to int64) {
	h := map[string]any{"from": from, "to": to}
	if s.batch != nil {
		s.batch(h)
	}
	writeJSON(w, h)
	le := binary.LittleEndian
	for _, c := range t.cols {
		var b []byte
		for i := from; i < to; i++ {
			switch c.Type {
			case rowsrc.TypeInt64, rowsrc.TypeUint64:
				b = le.AppendUint64(b, uint64(c.ints[i]))
			case rowsrc.TypeInt32, rowsrc.TypeDict:
				b = le.AppendUint32(b, uint32(int32(c.ints[i])))
			case rowsrc.TypeBool:
				b = append(b, byte(c.ints[i]))
			case rowsrc.TypeFloat64:
				b = le.AppendUint64(b, math.Float64bits(c.floats[i]))
			case rowsrc.TypeFloat32:
				b = le.AppendUint32(b, math.Float32bits(float32(c.floats[i])))
			}
		}
		if c.Nullable {
			for i := from; i < to; i++ {
				v := byte(1)
				if c.nulls[int(i)] {
					v = 0
				}
				b = append(b, v)
			}
		}
		w.Write(b)
	}
}
