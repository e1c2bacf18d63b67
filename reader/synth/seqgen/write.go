package seqgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/xdlgo/xps/reader"
)

// ErrFormat is returned (wrapped) by Write for a format it does not write.
var ErrFormat = errors.New("seqgen: format not written (want libffm or group)")

// Write writes the next n samples of the stream to w in format f,
// reader.LibFFM or reader.SampleGroup, and calls sample, when it is not
// nil, with the label and the teacher's click probability of each sample
// written, in order. It holds one group at a time: its memory does not
// grow with n.
//
// The group format writes "group 2", the level-1 line "1 - - 0:user
// 1:segment 2:item ... 3:cat ... 4:item ... 5:cat ..." and one line "0 0
// label 6:item 7:cat" per candidate; a call starts with a group header
// even within a group (the rest of a group cut by the previous call). The
// libFFM format writes each sample as "label" and the same features with
// the value 1, level 1 first. Tokens are decimal item, category, user and
// segment numbers. Successive calls continue one stream: Write(a) then
// Write(b) writes the samples of Write(a+b), and NextGroup draws them too.
func (g *Generator) Write(w io.Writer, n int, f reader.Format, sample func(label, prob float32)) error {
	if f != reader.LibFFM && f != reader.SampleGroup {
		return fmt.Errorf("%w: %v", ErrFormat, f)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	for i := 0; i < n; i++ {
		first := g.next()
		g.level1Text()
		b := g.line[:0]
		if f == reader.LibFFM {
			b = append(b, '0'+byte(g.label))
			b = append(b, g.ffmTok...)
			b = g.appendCandidate(b, ":1")
		} else {
			if first || i == 0 {
				b = append(b, "group 2\n1 - -"...)
				b = append(b, g.groupTok...)
				b = append(b, '\n')
			}
			b = append(b, "0 0 "...)
			b = append(b, '0'+byte(g.label))
			b = g.appendCandidate(b, "")
		}
		g.line = b
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("seqgen: write %v: %w", f, err)
		}
		if sample != nil {
			sample(g.label, float32(g.prob))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("seqgen: write %v: %w", f, err)
	}
	return nil
}

// appendCandidate appends " 6:item 7:cat" (each token followed by value)
// and a newline.
func (g *Generator) appendCandidate(b []byte, value string) []byte {
	b = append(b, " 6:"...)
	b = strconv.AppendUint(b, uint64(g.cand), 10)
	b = append(b, value...)
	b = append(b, " 7:"...)
	b = strconv.AppendUint(b, uint64(g.w.category(g.cand)), 10)
	b = append(b, value...)
	return append(b, '\n')
}

// level1Text fills groupTok and ffmTok for the current group.
func (g *Generator) level1Text() {
	if g.textOK {
		return
	}
	g.groupTok, g.ffmTok = g.groupTok[:0], g.ffmTok[:0]
	g.level1(func(f uint32, tok uint64) {
		start := len(g.groupTok)
		g.groupTok = append(g.groupTok, ' ')
		g.groupTok = strconv.AppendUint(g.groupTok, uint64(f), 10)
		g.groupTok = append(g.groupTok, ':')
		g.groupTok = strconv.AppendUint(g.groupTok, tok, 10)
		g.ffmTok = append(g.ffmTok, g.groupTok[start:]...)
		g.ffmTok = append(g.ffmTok, ":1"...)
	})
	g.textOK = true
}
