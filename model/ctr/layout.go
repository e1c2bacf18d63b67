package ctr

import (
	"errors"
	"fmt"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/sparsenet"
)

// DenseName is the name of the MLP's dense parameter vector on the shards
// and in an export.
const DenseName = "mlp"

// MaxFields bounds the number of fields of a model: the MLP input is one
// pooled vector per field, so a stray huge field number in the data would
// otherwise ask for a giant network.
const MaxFields = 4096

// maxDenseParams bounds the MLP's parameter count (one gRPC message carries
// a shard's share of it as float32s).
const maxDenseParams = 1 << 27

// ErrNoFields is returned for a Shape without fields.
var ErrNoFields = errors.New("ctr: the model has no fields")

// Shape is the input shape of a model: its fields, the level of each and,
// for dense fields, their width. The trainer stores it in the model as
// JSON (beside the config), so that a server builds the same Net.
type Shape struct {
	// Fields is the number of fields.
	Fields int `json:"fields"`
	// Levels[f] is the level of field f (nil: every field at level 0).
	Levels []int `json:"levels,omitempty"`
	// DenseWidths[f] > 0 marks field f as a dense field of that width (nil:
	// every field sparse).
	DenseWidths []int `json:"dense_widths,omitempty"`
}

// NewLayout builds the sparse layout of a model: cfg.Model.FieldTables
// (default: every field in Tables[0]), shape's levels (all 0 when
// train.compress is off) and dense widths. A shape without fields is an
// error wrapping ErrNoFields.
func NewLayout(cfg config.Config, shape Shape) (*sparsenet.Layout, error) {
	fields := shape.Fields
	if fields <= 0 {
		return nil, ErrNoFields
	}
	if fields > MaxFields {
		return nil, fmt.Errorf("ctr: the shape has %d fields, more than %d", fields, MaxFields)
	}
	tableIdx := map[string]int{}
	dims := make([]int, len(cfg.Model.Tables))
	for i, tb := range cfg.Model.Tables {
		tableIdx[tb.Name] = i
		dims[i] = tb.Dim
	}
	if n := len(cfg.Model.FieldTables); n > 0 && n != fields {
		return nil, fmt.Errorf("ctr: model.field_tables names %d tables but the model has %d fields (set model.fields)", n, fields)
	}
	specs := make([]sparsenet.FieldSpec, fields)
	for f := range specs {
		if len(cfg.Model.FieldTables) > 0 {
			specs[f].Table = tableIdx[cfg.Model.FieldTables[f]]
		}
		if f < len(shape.Levels) && *cfg.Train.Compress {
			specs[f].Level = shape.Levels[f]
		}
		if f < len(shape.DenseWidths) && shape.DenseWidths[f] > 0 {
			specs[f].Table, specs[f].DenseWidth = -1, shape.DenseWidths[f]
		}
		if isSeqField(cfg, f) && specs[f].Table >= 0 {
			specs[f].SeqLen = cfg.Model.Sequence.MaxLen
		}
	}
	if cfg.Model.HasWide() { // the wide part: every sparse field mirrored into the dim-1 table
		wide := tableIdx[config.WideTable]
		for f := range fields {
			if specs[f].Table >= 0 {
				specs = append(specs, sparsenet.FieldSpec{Table: wide, Level: specs[f].Level, From: f + 1})
			}
		}
	}
	pooling := sparsenet.Sum
	if cfg.Model.Pooling == "mean" {
		pooling = sparsenet.Mean
	}
	l, err := sparsenet.NewLayoutFields(specs, dims, pooling)
	if err != nil {
		return nil, fmt.Errorf("ctr: %w", err)
	}
	return l, nil
}

func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n, n+n/4)
	}
	return b[:n]
}
