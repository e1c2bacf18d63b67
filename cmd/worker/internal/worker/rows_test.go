package worker

import (
	"strings"
	"testing"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
)

// TestRowServiceRefusals: -rows with what it replaces, or without what
// it needs, is refused with the reason; with a column map it sets the
// job's sources.
func TestRowServiceRefusals(t *testing.T) {
	columns := reader.ColumnMap{Label: "y", Fields: []reader.ColumnField{{Column: "x"}}}
	for _, c := range []struct {
		f    Flags
		edit func(*config.Config)
		want string
	}{
		{Flags{rowsTest: true}, nil, "-rows-test needs -rows"},
		{Flags{rows: "s"}, func(c *config.Config) { c.Job.Train = []string{"a.libffm"} }, "give no job.train (it is a.libffm)"},
		{Flags{rows: "s", rowsTest: true}, func(c *config.Config) { c.Job.Test = []string{"t.libffm"} }, "give no job.test"},
		{Flags{rows: "s"}, func(c *config.Config) { c.Train.Autotune = true }, "train.autotune reads files"},
		{Flags{rows: "s"}, func(c *config.Config) { c.Train.Columns = reader.ColumnMap{} }, "-rows needs train.columns"},
	} {
		opts := job.Options{Config: config.Config{Train: config.TrainConfig{Columns: columns, OnError: "stop"}}}
		if c.edit != nil {
			c.edit(&opts.Config)
		}
		if err := c.f.rowService(&opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.f, err, c.want)
		}
	}
	opts := job.Options{Config: config.Config{Train: config.TrainConfig{Columns: columns, OnError: "stop"}}}
	f := Flags{rows: "s", rowsTest: true}
	if err := f.rowService(&opts); err != nil || opts.Source == nil || opts.TestSource == nil {
		t.Fatalf("a column map and -rows: %v, sources set %v %v", err, opts.Source != nil, opts.TestSource != nil)
	}
}
