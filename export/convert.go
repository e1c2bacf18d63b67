package export

import (
	"fmt"

	"github.com/xdlgo/xps/snapshot"
)

// Convert writes export m of src into dst under the same sequence number
// with each table's rows re-encoded by quant[table] (tables not named
// keep their encoding), and commits it: an fp32 export turned into an
// fp16 or int8 one, say, to compare them on one model. Converting a
// quantized export to a wider encoding does not restore what quantizing
// lost.
func Convert(src, dst snapshot.Store, m *Manifest, quant map[string]string) (*Manifest, error) {
	out := *m
	out.Checksum, out.Tables, out.Dense = "", nil, nil
	for _, t := range m.Tables {
		q, ok := quant[t.Name]
		if !ok {
			q = t.Quant
		}
		if err := CheckQuant(q); err != nil {
			return nil, err
		}
		nt := t
		nt.Quant, nt.Files = q, nil
		v := make([]float32, t.Dim)
		for _, f := range t.Files {
			tw, err := snapshot.CreateBlockTableFile(dst, out.Dir(), f.Name, RowBytes(q, t.Dim))
			if err != nil {
				return nil, err
			}
			var row []byte
			err = readFile(src, m, &t, f, v, func(id uint64, v []float32) error {
				if v == nil {
					return tw.Delete(id)
				}
				row = AppendRow(row[:0], q, v)
				return tw.Add(id, row)
			})
			if err != nil {
				tw.Abort()
				return nil, fmt.Errorf("export %d: convert %s: %w", m.Seq, f.Name, err)
			}
			nf, err := tw.Close()
			if err != nil {
				return nil, err
			}
			nt.Files = append(nt.Files, nf)
		}
		out.Tables = append(out.Tables, nt)
	}
	for _, d := range m.Dense {
		v, err := ReadDense(src, m, d.Name)
		if err != nil {
			return nil, err
		}
		nd := d
		nd.Parts = nil
		for _, p := range d.Parts {
			f, err := snapshot.WriteFileIn(dst, out.Dir(), p.File.Name, AppendRow(nil, FP32, v[p.Lo:p.Hi]))
			if err != nil {
				return nil, err
			}
			nd.Parts = append(nd.Parts, DensePart{Lo: p.Lo, Hi: p.Hi, File: f})
		}
		out.Dense = append(out.Dense, nd)
	}
	if err := Commit(dst, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
