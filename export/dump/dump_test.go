package dump_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/export/dump"
	"github.com/xdlgo/xps/snapshot"
)

// writeExport writes export seq of table emb (dim 2, fp32) with a file
// per shard: shards[k] the ids of shard k's rows, each row (id, seq);
// dels the ids shard 0 deletes; dense mlp is (seq, seq+1).
func writeExport(t *testing.T, s snapshot.Store, seq, base uint64, shards [][]uint64, dels []uint64) {
	t.Helper()
	var files []snapshot.FileMeta
	for k, ids := range shards {
		tw, err := snapshot.CreateTableFile(s, export.Dir(seq), export.TableName("emb", k), true)
		if err != nil {
			t.Fatal(err)
		}
		var mine []uint64
		if k == 0 {
			mine = dels
		}
		for _, id := range slices.Sorted(slices.Values(append(slices.Clone(ids), mine...))) {
			if slices.Contains(mine, id) {
				err = tw.Delete(id)
			} else {
				err = tw.Add(id, export.AppendRow(nil, export.FP32, []float32{float32(id), float32(seq)}))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		f, err := tw.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	d, err := snapshot.WriteFileIn(s, export.Dir(seq), export.DenseName("mlp", 0), export.AppendRow(nil, export.FP32, []float32{float32(seq), float32(seq + 1)}))
	if err != nil {
		t.Fatal(err)
	}
	kind, full := export.KindDelta, uint64(1)
	if base == 0 {
		kind, full = export.KindFull, seq
	}
	m := &export.Manifest{Seq: seq, Kind: kind, Base: base, Full: full, Shards: len(shards), Samples: int64(100 * seq),
		Config: json.RawMessage(`{"Model":{"Kind":"mlp"}}`), Shape: json.RawMessage(`{"fields":2}`),
		Tables: []export.Table{{Name: "emb", Dim: 2, Quant: export.FP32, Files: files}},
		Dense:  []export.Dense{{Name: "mlp", Len: 2, Parts: []export.DensePart{{Lo: 0, Hi: 2, File: d}}}}}
	if err := export.Commit(s, m); err != nil {
		t.Fatal(err)
	}
}

// TestLoadAppliesTheChain: a full export on two shards and two deltas
// (rows replaced, added, deleted, a deleted id added again) load as serve
// would apply them, in id order, with the last export's dense vector; the
// dump holds exactly that, in the header's order and sizes.
func TestLoadAppliesTheChain(t *testing.T) {
	s, err := snapshot.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dump.Load(s); !errors.Is(err, export.ErrNoExport) {
		t.Fatalf("an empty store: %v, want ErrNoExport", err)
	}
	writeExport(t, s, 1, 0, [][]uint64{{5, 1, 9, math.MaxUint64}, {2, 7}}, nil)
	writeExport(t, s, 2, 1, [][]uint64{{9, 3}, {}}, []uint64{1, 7, 4}) // 4: deleted without a row
	writeExport(t, s, 3, 2, [][]uint64{{7}, {}}, []uint64{5})
	m, err := dump.Load(s)
	if err != nil {
		t.Fatal(err)
	}
	// id -> the export its row comes from
	want := map[uint64]float32{2: 1, 3: 2, 7: 3, 9: 2, math.MaxUint64: 1}
	tab := m.Tables[0]
	if !slices.Equal(m.Chain, []uint64{1, 2, 3}) || len(tab.IDs) != len(want) || !slices.IsSorted(tab.IDs) {
		t.Fatalf("chain %v, ids %v: want chain 1, 2, 3 and ids 2, 3, 7, 9, max in order", m.Chain, tab.IDs)
	}
	for i, id := range tab.IDs {
		if v := tab.Values[2*i : 2*i+2]; v[0] != float32(id) || v[1] != want[id] {
			t.Fatalf("id %d: row %v, want (%v, %v)", id, v, float32(id), want[id])
		}
	}
	var buf bytes.Buffer
	if err := m.Write(&buf, "here"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(&buf)
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Format  string
		Version int
		Seq     uint64
		Samples int64
		Config  map[string]any
		Arrays  []struct {
			Name  string
			DType string
			Shape []int
		}
	}
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	if h.Format != "xps-export-dump" || h.Version != dump.Version || h.Seq != 3 || h.Samples != 300 || h.Config["model"].(map[string]any)["kind"] != "mlp" || len(h.Arrays) != 3 {
		t.Fatalf("header %s", line)
	}
	ids := make([]uint64, h.Arrays[0].Shape[0])
	vals := make([]float32, h.Arrays[1].Shape[0]*h.Arrays[1].Shape[1])
	dense := make([]float32, h.Arrays[2].Shape[0])
	for _, a := range []any{ids, vals, dense} {
		if err := binary.Read(r, binary.LittleEndian, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("bytes after the arrays: %v", err)
	}
	if !slices.Equal(ids, tab.IDs) || !slices.Equal(vals, tab.Values) || !slices.Equal(dense, []float32{3, 4}) {
		t.Fatalf("the dump's arrays: ids %v, values %v, dense %v", ids, vals, dense)
	}
}
