package datagen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/xdlgo/xps/reader"
)

// ErrFormat is returned (wrapped) by Write for a format it does not write.
var ErrFormat = errors.New("datagen: format not written (want libffm or group)")

// Write writes the next n samples of the stream to w in format f, which is
// reader.LibFFM or reader.SampleGroup (see WriteLibFFM and WriteGroups for
// the lines), and calls sample, when it is not nil, with the label and the
// teacher's click probability of each sample written, in order. It holds one sample at a
// time: its memory does not grow with n, so it can write streams of any
// length. It draws exactly the samples Generate would.
func (g *Generator) Write(w io.Writer, n int, f reader.Format, sample func(label, prob float32)) error {
	if f != reader.LibFFM && f != reader.SampleGroup {
		return fmt.Errorf("%w: %v", ErrFormat, f)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	for i := 0; i < n; i++ {
		newRun := g.remaining == 0
		label, p, _, _ := g.next()
		b := g.line[:0]
		if f == reader.LibFFM {
			b = g.appendLibFFM(b, label)
		} else {
			b = g.appendGroupLines(b, label, newRun || i == 0)
		}
		g.line = b
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("datagen: write %v: %w", f, err)
		}
		if sample != nil {
			sample(label, float32(p))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("datagen: write %v: %w", f, err)
	}
	return nil
}

// WriteLibFFM writes n samples as libFFM lines "label field:token:1 ...",
// the token of an id being its decimal Zipf rank (with drift, its position
// in the id space; see Config.DriftLifetime). It draws exactly the samples
// Generate would: reading the output with reader.Read and Format LibFFM
// gives the Dataset Generate(ds, n) would have built, and the returned
// probabilities are the same. It keeps the n probabilities; Write keeps
// nothing.
func (g *Generator) WriteLibFFM(w io.Writer, n int) (probs []float32, err error) {
	probs = make([]float32, 0, n)
	err = g.Write(w, n, reader.LibFFM, func(_, p float32) { probs = append(probs, p) })
	return probs, err
}

// WriteGroups writes n samples in the sample-group text format (see package
// reader): one group per user run, "group 2", a level-1 line with the user's
// fields, then one level-0 line per sample with its label and item fields,
// tokens being decimal Zipf ranks (positions in the id space with drift).
// A call starts with a group header even within a run. It draws exactly the
// samples Generate would; reading the output back gives the same ids,
// labels and order. It keeps the n probabilities; Write keeps nothing.
func (g *Generator) WriteGroups(w io.Writer, n int) (probs []float32, err error) {
	probs = make([]float32, 0, n)
	err = g.Write(w, n, reader.SampleGroup, func(_, p float32) { probs = append(probs, p) })
	return probs, err
}

// appendLibFFM appends the libFFM line of the current sample.
func (g *Generator) appendLibFFM(b []byte, label float32) []byte {
	b = append(b, '0')
	if label == 1 {
		b[len(b)-1] = '1'
	}
	for _, list := range [2][]entry{g.user, g.item} {
		for _, e := range list {
			b = append(b, ' ')
			b = strconv.AppendUint(b, uint64(e.field), 10)
			b = append(b, ':')
			b = strconv.AppendUint(b, e.tok, 10)
			b = append(b, ":1"...)
		}
	}
	return append(b, '\n')
}

// appendGroupLines appends the current sample's level-0 line, after a
// group header and the user's level-1 line when header is set.
func (g *Generator) appendGroupLines(b []byte, label float32, header bool) []byte {
	if header {
		b = append(b, "group 2\n1 - -"...)
		b = appendTokens(b, g.user)
		b = append(b, '\n')
	}
	b = append(b, "0 0 0"...)
	if label == 1 {
		b[len(b)-1] = '1'
	}
	b = appendTokens(b, g.item)
	return append(b, '\n')
}

// appendTokens appends " field:token" for each entry.
func appendTokens(b []byte, list []entry) []byte {
	for _, e := range list {
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(e.field), 10)
		b = append(b, ':')
		b = strconv.AppendUint(b, e.tok, 10)
	}
	return b
}

// Tokens draws the next n samples of the stream, as Write does, and calls
// fn with each one's label, the teacher's click probability and its
// tokens by field: fields[f] holds field f's tokens in the order Write
// writes them (the slices are reused by the next call). The tokens are
// Write's: a libFFM line "label f:t:1 ..." lists fields[0], fields[1],
// ... in turn. An error of fn ends the draw and is returned.
func (g *Generator) Tokens(n int, fn func(label, prob float32, fields [][]uint64) error) error {
	fields := make([][]uint64, g.cfg.Fields)
	for range n {
		label, p, _, _ := g.next()
		for f := range fields {
			fields[f] = fields[f][:0]
		}
		for _, list := range [2][]entry{g.user, g.item} {
			for _, e := range list {
				fields[e.field] = append(fields[e.field], e.tok)
			}
		}
		if err := fn(label, float32(p), fields); err != nil {
			return err
		}
	}
	return nil
}

// Fields is the number of fields of the generator's samples.
func (g *Generator) Fields() int { return g.cfg.Fields }
