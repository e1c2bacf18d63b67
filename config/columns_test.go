package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdlgo/xps/reader"
)

// TestParquetColumns: format parquet takes train.columns, checked with
// the config; the other formats and Kafka refuse them.
func TestParquetColumns(t *testing.T) {
	c, err := Parse([]byte(`
job: {train: [data/part-0.parquet]}
train:
  columns:
    label: click
    fields:
      - {column: user_id, user: true}
      - {column: tags, weights: tag_w}
      - {column: price, kind: bucket, boundaries: [1, 10, 100]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Train.Format != "parquet" || c.Train.Columns.Label != "click" || len(c.Train.Columns.Fields) != 3 || !c.Train.Columns.Grouped() {
		t.Fatalf("format %q, columns %+v", c.Train.Format, c.Train.Columns)
	}
	for yaml, want := range map[string]string{
		"job: {train: [a.parquet]}\n": "train.columns: no label column",
		"job: {train: [a.parquet]}\ntrain: {columns: {label: y, fields: [{column: a, kind: onehot}]}}":               `unknown kind "onehot"`,
		"job: {train: [a.libffm]}\ntrain: {columns: {label: y}}":                                                     "train.format is libffm, not parquet",
		"kafka: {brokers: [k:9092], topic: t}\ntrain: {format: parquet, columns: {label: y, fields: [{column: a}]}}": "Kafka messages are lines",
		"train: {columns: {label: y, fields: [{column: a}]}, format: parquet}\njob: {train: [a.parquet]}\nbogus: 1":  "bogus",
	} {
		_, err := Parse([]byte(yaml))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want it to say %q", yaml, err, want)
		}
	}
}

// TestFormatOfDirectory: a directory of part files as Spark writes them
// (_SUCCESS, hidden .crc files) has the format of its parts.
func TestFormatOfDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"_SUCCESS", ".part-00000.snappy.parquet.crc", "part-00000-1f.snappy.parquet", "part-00001-1f.snappy.parquet"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := FormatOf([]string{dir}); got != reader.Parquet.String() {
		t.Errorf("FormatOf(a Spark directory) = %q, want parquet", got)
	}
	if got := FormatOf([]string{"hdfs://nn:8020/data"}); got != "libffm" {
		t.Errorf("FormatOf(an HDFS directory) = %q, want the default libffm", got)
	}
}
