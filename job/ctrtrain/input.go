package ctrtrain

import (
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/parquetsrc"
)

// input is how the job reads its files: the format and malformed-input
// policy of train, the sequence fields' namespaces, Parquet's column map,
// and the file system.
type input struct {
	format  reader.Format
	policy  reader.ErrorPolicy
	ns      []uint32
	columns reader.ColumnMap
	fsys    reader.FS
}

// inputOf is cfg's input on fsys (nil: the local file system).
func inputOf(cfg config.Config, fsys reader.FS) (input, error) {
	format, err := reader.ParseFormat(cfg.Train.Format)
	if err != nil {
		return input{}, err
	}
	policy, err := reader.ParseErrorPolicy(cfg.Train.OnError)
	if err != nil {
		return input{}, err
	}
	return input{format: format, policy: policy, ns: cfg.Model.Sequence.Namespace(0), columns: cfg.Train.Columns, fsys: fsys}, nil
}

// open opens splits from start: Parquet's source, or the text formats'
// (anyOrder: the splits are shuffled blocks).
func (in input) open(splits []reader.FileSplit, start reader.Position, anyOrder bool) (reader.Source, error) {
	if in.format == reader.Parquet {
		return parquetsrc.NewSource(splits, parquetsrc.Options{Columns: in.columns, Namespace: in.ns, OnError: in.policy,
			Start: start, FS: in.fsys, AnyOrder: anyOrder})
	}
	dec, err := reader.NewDecoderWith(in.format, reader.DecoderOptions{Namespace: in.ns})
	if err != nil {
		return nil, err
	}
	return reader.NewFileSource(splits, reader.FileSourceOptions{Decoder: dec, OnError: in.policy, FS: in.fsys, Start: start,
		AnyOrder: anyOrder})
}

// check looks, before any training, at what can be checked of the files
// of splits without reading them: Parquet footers against the column
// map and against one another (every problem listed).
func (in input) check(splits []reader.FileSplit) error {
	if in.format != reader.Parquet {
		return nil
	}
	var paths []string
	for i, sp := range splits {
		if i == 0 || sp.Path != splits[i-1].Path {
			paths = append(paths, sp.Path)
		}
	}
	return parquetsrc.Check(in.fsys, paths, in.columns, in.ns)
}

// levels reports whether the input gives groups of several levels, whose
// fields' levels the model takes from the data.
func (in input) levels() bool {
	return in.format == reader.SampleGroup || in.format == reader.Parquet && in.columns.Grouped()
}
