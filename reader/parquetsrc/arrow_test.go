package parquetsrc

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/xdlgo/xps/reader"
)

// This file writes the test data with apache/arrow-go's low-level Parquet
// writer, an implementation independent of the reader's library, and the
// same rows as text (the sample-group format and libFFM) for the reader
// package to read: the two must give the same samples.

// trow is one row of the test data.
type trow struct {
	label    int32
	nullLab  bool
	user     int64
	item     *string
	tags     []*string // nil with tagsNull: a null list
	tagsNull bool
	tagW     []*float64
	price    *float64
	age      int32
	emb      []float32
	embNull  bool
	flag     bool
	code     uint32
}

// genRows makes n rows whose users come in runs (for sample groups);
// nullElems puts null elements in the lists (not in the two-level
// encoding, whose elements are required).
func genRows(n int, seed uint64, nullElems bool) []trow {
	r := rand.New(rand.NewPCG(seed, 7))
	rows := make([]trow, n)
	user := int64(1000)
	for i := range rows {
		if r.IntN(4) == 0 {
			user += 1 + int64(r.IntN(3))
		}
		t := trow{label: int32(r.IntN(2)), user: user, age: int32(r.IntN(70)), flag: r.IntN(3) == 0, code: r.Uint32()}
		if r.IntN(20) != 0 {
			s := "i" + strconv.Itoa(int(r.ExpFloat64()*30))
			t.item = &s
		}
		switch k := r.IntN(12); {
		case k == 0:
			t.tagsNull = true
		default:
			for range k % 5 {
				if nullElems && r.IntN(9) == 0 {
					t.tags, t.tagW = append(t.tags, nil), append(t.tagW, nil)
					continue
				}
				s := "t" + strconv.Itoa(r.IntN(40))
				w := float64(float32(r.Float64() * 3))
				t.tags, t.tagW = append(t.tags, &s), append(t.tagW, &w)
			}
		}
		if r.IntN(6) != 0 {
			p := float64(float32(r.ExpFloat64() * 20))
			t.price = &p
		}
		if r.IntN(10) == 0 {
			t.embNull = true
		} else {
			for range r.IntN(4) {
				t.emb = append(t.emb, float32(r.NormFloat64()))
			}
		}
		rows[i] = t
	}
	return rows
}

// wopts says how writeArrow writes a file.
type wopts struct {
	codec     compress.Compression
	dict      bool
	twoLevel  bool // lists in the older two-level encoding
	v2        bool // data pages v2
	pageSize  int64
	rowGroup  int // rows per row group
	nullLabel bool
	signed    bool // code as a signed INT32 (a schema change)
}

func (o wopts) String() string {
	return fmt.Sprintf("%v/dict=%v/2level=%v/v2=%v/page=%d/rg=%d", o.codec, o.dict, o.twoLevel, o.v2, o.pageSize, o.rowGroup)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// listNode is an optional list of elem: three levels (list, element),
// or two (a repeated element named "array", as Spark and Hive write).
func listNode(name string, elem func(name string, rep parquet.Repetition) schema.Node, optElem, twoLevel bool) schema.Node {
	if twoLevel {
		return must(schema.NewGroupNodeLogical(name, parquet.Repetitions.Optional,
			schema.FieldList{elem("array", parquet.Repetitions.Repeated)}, schema.NewListLogicalType(), -1))
	}
	rep := parquet.Repetitions.Required
	if optElem {
		rep = parquet.Repetitions.Optional
	}
	inner := must(schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{elem("element", rep)}, -1))
	return must(schema.NewGroupNodeLogical(name, parquet.Repetitions.Optional, schema.FieldList{inner}, schema.NewListLogicalType(), -1))
}

func strNode(name string, rep parquet.Repetition) schema.Node {
	return must(schema.NewPrimitiveNodeLogical(name, rep, schema.StringLogicalType{}, parquet.Types.ByteArray, 0, -1))
}

func prim(typ parquet.Type) func(string, parquet.Repetition) schema.Node {
	return func(name string, rep parquet.Repetition) schema.Node {
		return must(schema.NewPrimitiveNode(name, rep, typ, -1, 0))
	}
}

func testSchema(o wopts) *schema.GroupNode {
	labRep := parquet.Repetitions.Required
	if o.nullLabel {
		labRep = parquet.Repetitions.Optional
	}
	fields := schema.FieldList{
		prim(parquet.Types.Int32)("label", labRep),
		prim(parquet.Types.Int64)("user", parquet.Repetitions.Required),
		strNode("item", parquet.Repetitions.Optional),
		listNode("tags", strNode, !o.twoLevel, o.twoLevel),
		listNode("tag_w", prim(parquet.Types.Double), !o.twoLevel, o.twoLevel),
		prim(parquet.Types.Double)("price", parquet.Repetitions.Optional),
		prim(parquet.Types.Int32)("age", parquet.Repetitions.Required),
		listNode("emb", prim(parquet.Types.Float), false, o.twoLevel),
		prim(parquet.Types.Boolean)("flag", parquet.Repetitions.Required),
		must(schema.NewPrimitiveNodeLogical("code", parquet.Repetitions.Required, schema.NewIntLogicalType(32, o.signed), parquet.Types.Int32, 0, -1)),
	}
	return must(schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1))
}

// writeArrow writes rows to path as Parquet with arrow-go.
func writeArrow(t testing.TB, path string, rows []trow, o wopts) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	props := []parquet.WriterProperty{parquet.WithCompression(o.codec), parquet.WithDictionaryDefault(o.dict)}
	if o.v2 {
		props = append(props, parquet.WithDataPageVersion(parquet.DataPageV2))
	}
	if o.pageSize > 0 {
		props = append(props, parquet.WithDataPageSize(o.pageSize), parquet.WithBatchSize(64))
	}
	w := file.NewParquetWriter(f, testSchema(o), file.WithWriterProps(parquet.NewWriterProperties(props...)))
	step := o.rowGroup
	if step <= 0 {
		step = len(rows)
	}
	for lo := 0; lo < len(rows); lo += step {
		rg := w.AppendRowGroup()
		writeGroup(rg, rows[lo:min(lo+step, len(rows))], o)
		if err := rg.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeGroup writes one row group's columns in schema order.
func writeGroup(rg file.SerialRowGroupWriter, rows []trow, o wopts) {
	next := func() file.ColumnChunkWriter { return must(rg.NextColumn()) }
	var i32 []int32
	var def []int16
	for _, r := range rows {
		i32 = append(i32, r.label)
		def = append(def, int16(b2i(!r.nullLab)))
	}
	if o.nullLabel {
		must(next().(*file.Int32ColumnChunkWriter).WriteBatch(compact(i32, def, 1), def, nil))
	} else {
		must(next().(*file.Int32ColumnChunkWriter).WriteBatch(i32, nil, nil))
	}
	var i64 []int64
	for _, r := range rows {
		i64 = append(i64, r.user)
	}
	must(next().(*file.Int64ColumnChunkWriter).WriteBatch(i64, nil, nil))
	var ba []parquet.ByteArray
	def = def[:0]
	for _, r := range rows {
		if r.item != nil {
			ba = append(ba, parquet.ByteArray(*r.item))
		}
		def = append(def, int16(b2i(r.item != nil)))
	}
	must(next().(*file.ByteArrayColumnChunkWriter).WriteBatch(ba, def, nil))
	writeLists(next, rows, o)
	var f64 []float64
	def = def[:0]
	for _, r := range rows {
		if r.price != nil {
			f64 = append(f64, *r.price)
		}
		def = append(def, int16(b2i(r.price != nil)))
	}
	must(next().(*file.Float64ColumnChunkWriter).WriteBatch(f64, def, nil))
	i32 = i32[:0]
	for _, r := range rows {
		i32 = append(i32, r.age)
	}
	must(next().(*file.Int32ColumnChunkWriter).WriteBatch(i32, nil, nil))
	writeEmb(next, rows, o)
	var bs []bool
	i32 = i32[:0]
	for _, r := range rows {
		bs = append(bs, r.flag)
		i32 = append(i32, int32(r.code))
	}
	must(next().(*file.BooleanColumnChunkWriter).WriteBatch(bs, nil, nil))
	must(next().(*file.Int32ColumnChunkWriter).WriteBatch(i32, nil, nil))
}

// compact keeps the values whose definition level is max.
func compact[T any](vals []T, def []int16, max int16) []T {
	var out []T
	for i, d := range def {
		if d == max {
			out = append(out, vals[i])
		}
	}
	return out
}

// writeLists writes tags and tag_w: null list (def 0), empty (1), null
// element (2, three-level only), element (maxDef).
func writeLists(next func() file.ColumnChunkWriter, rows []trow, o wopts) {
	maxDef := int16(3)
	if o.twoLevel {
		maxDef = 2
	}
	var ba []parquet.ByteArray
	var f64 []float64
	var def, rep []int16
	for _, r := range rows {
		switch {
		case r.tagsNull:
			def, rep = append(def, 0), append(rep, 0)
		case len(r.tags) == 0:
			def, rep = append(def, 1), append(rep, 0)
		}
		for j, s := range r.tags {
			rep = append(rep, int16(b2i(j > 0)))
			if s == nil {
				def = append(def, maxDef-1)
				continue
			}
			def = append(def, maxDef)
			ba = append(ba, parquet.ByteArray(*s))
			f64 = append(f64, *r.tagW[j])
		}
	}
	must(next().(*file.ByteArrayColumnChunkWriter).WriteBatch(ba, def, rep))
	must(next().(*file.Float64ColumnChunkWriter).WriteBatch(f64, def, rep))
}

// writeEmb writes emb, a list of required floats.
func writeEmb(next func() file.ColumnChunkWriter, rows []trow, o wopts) {
	var f32 []float32
	var def, rep []int16
	for _, r := range rows {
		switch {
		case r.embNull:
			def, rep = append(def, 0), append(rep, 0)
		case len(r.emb) == 0:
			def, rep = append(def, 1), append(rep, 0)
		}
		for j, v := range r.emb {
			def, rep = append(def, 2), append(rep, int16(b2i(j > 0)))
			f32 = append(f32, v)
		}
	}
	must(next().(*file.Float32ColumnChunkWriter).WriteBatch(f32, def, rep))
}

// testColumns maps the test schema's columns: all of them, user-level or
// not, with or without the dense emb (libFFM has no dense features).
func testColumns(grouped, withDense bool) reader.ColumnMap {
	u := uint32(9)
	fields := []reader.ColumnField{
		{Column: "item"},
		{Column: "tags", Weights: "tag_w"},
		{Column: "price"},
		{Column: "age", Kind: "bucket", Boundaries: []float64{18, 25, 35, 50}},
		{Column: "flag"},
		{Column: "code"},
		{Column: "user", Field: &u, User: grouped},
	}
	if withDense {
		fields = append(fields, reader.ColumnField{Column: "emb"})
	}
	return reader.ColumnMap{Label: "label", Fields: fields}
}

// ftoa writes a float32 so that parsing it gives it back.
func ftoa(v float64) string { return strconv.FormatFloat(float64(float32(v)), 'g', -1, 32) }

// features writes row r's sample features (user-level ones when user) as
// the text formats' "field:token:value" and "field=v,..." tokens, in the
// order of testColumns.
func features(r trow, grouped, user, withDense bool) []string {
	var out []string
	if !user {
		if r.item != nil {
			out = append(out, "0:"+*r.item+":1")
		}
		for j, s := range r.tags {
			if s != nil {
				out = append(out, "1:"+*s+":"+ftoa(*r.tagW[j]))
			}
		}
		if r.price != nil {
			out = append(out, "2:price:"+ftoa(*r.price))
		}
		b := 0
		for _, x := range []int32{18, 25, 35, 50} {
			if r.age >= x {
				b++
			}
		}
		out = append(out, fmt.Sprintf("3:%d:1", b), fmt.Sprintf("4:%v:1", r.flag), fmt.Sprintf("5:%d:1", r.code))
	}
	if user == grouped {
		out = append(out, fmt.Sprintf("9:%d:1", r.user))
	}
	if !user && withDense && len(r.emb) > 0 {
		vs := make([]string, len(r.emb))
		for j, v := range r.emb {
			vs[j] = ftoa(float64(v))
		}
		out = append(out, "7="+strings.Join(vs, ","))
	}
	return out
}
