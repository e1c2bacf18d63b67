package reader

import (
	"context"
	"path"

	"github.com/xdlgo/xps/model/hashmix"
)

// holdoutSalt keeps the held-out choice apart from other hashes of
// positions (SampleDigest's).
const holdoutSalt = 0x68656c646f7574

// HeldOut reports whether the group at p is in the held-out share of 1 in
// every groups (on average): a hash of its file's base name and its
// offset, so every chunk of a group (Position.Index) goes the same way,
// and the choice is the same whatever order, splits or shuffle windows
// the group is read in, and wherever the file is named from (a relative
// or an absolute path, another directory). every below 2 holds nothing
// out.
func HeldOut(p Position, every int) bool {
	return every > 1 && heldOut(StreamHash(path.Base(p.File)), p.Offset, every)
}

func heldOut(stream uint64, offset int64, every int) bool {
	return hashmix.Hash3(stream, uint64(offset), holdoutSalt)%uint64(every) == 0
}

// Holdout returns a Source of the groups of src that HeldOut(every) puts
// in the held-out share (held true: a validation set) or out of it (held
// false: the training data): the two are complementary. Its Position and
// Stats are src's (the groups passed over were read), and Close closes
// src. every below 2 holds nothing out.
func Holdout(src Source, every int, held bool) Source {
	return &holdout{Source: src, every: every, held: held}
}

type holdout struct {
	Source
	every int
	held  bool
	// file and stream cache the StreamHash of the last group's file's
	// base name.
	file   string
	stream uint64
}

func (h *holdout) Next(ctx context.Context, g *Group) error {
	for {
		if err := h.Source.Next(ctx, g); err != nil {
			return err
		}
		if g.Pos.File != h.file || h.stream == 0 {
			h.file, h.stream = g.Pos.File, StreamHash(path.Base(g.Pos.File))
		}
		if (h.every > 1 && heldOut(h.stream, g.Pos.Offset, h.every)) == h.held {
			return nil
		}
	}
}
