package reader

import (
	"context"
	"errors"
	"io"
)

// OpenFiles returns a FileSource over splits of local files: OpenFilesFS
// on LocalFS.
func OpenFiles(splits []FileSplit, f Format, onError ErrorPolicy) (*FileSource, error) {
	return OpenFilesFS(nil, splits, f, onError)
}

// OpenFilesFS returns a FileSource over splits of files of fsys (LocalFS
// when nil) with a new Decoder for format f and the given error policy,
// starting at the beginning.
func OpenFilesFS(fsys FS, splits []FileSplit, f Format, onError ErrorPolicy) (*FileSource, error) {
	return OpenFilesAtFS(fsys, splits, f, onError, Position{})
}

// OpenFilesAtFS is OpenFilesFS starting at start (see
// FileSourceOptions.Start).
func OpenFilesAtFS(fsys FS, splits []FileSplit, f Format, onError ErrorPolicy, start Position) (*FileSource, error) {
	dec, err := NewDecoder(f)
	if err != nil {
		return nil, err
	}
	return NewFileSource(splits, FileSourceOptions{Decoder: dec, OnError: onError, FS: fsys, Start: start})
}

// ReadAll reads src to its end and returns a copy of every group. It does
// not close src.
func ReadAll(ctx context.Context, src Source) ([]*Group, error) {
	var out []*Group
	g := new(Group)
	for {
		err := src.Next(ctx, g)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g.Clone())
	}
}
