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

// Digest reads src to its end and returns its number of samples and the
// sum (mod 2^64) of their SampleDigest: what a model that applied each
// sample of src once holds in its checkpoints (see compress.Batch.Digest).
// It does not close src.
func Digest(ctx context.Context, src Source) (samples int64, digest uint64, err error) {
	g := new(Group)
	for {
		err := src.Next(ctx, g)
		if errors.Is(err, io.EOF) {
			return samples, digest, nil
		}
		if err != nil {
			return samples, digest, err
		}
		stream := StreamHash(g.Pos.File)
		for j := g.Pos.Index; j < g.NumSamples(); j++ {
			digest += SampleDigest(stream, g.Pos.Offset, j)
			samples++
		}
	}
}
