package compress

import (
	"errors"
	"fmt"
	"math"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/sparsenet"
)

// ErrBadOptions is wrapped by Options.Validate's errors.
var ErrBadOptions = errors.New("compress: bad options")

// Options configures a Builder.
type Options struct {
	// BatchSize is the number of samples per batch; it must be > 0. There
	// is no default.
	BatchSize int
	// Layout gives each field its table (or dense width) and level; batches
	// have Layout.Levels() levels. Required.
	Layout *sparsenet.Layout
}

// Validate reports every problem of o at once.
func (o *Options) Validate() error {
	var errs []error
	if o.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("%w: batch size %d, want > 0", ErrBadOptions, o.BatchSize))
	}
	if o.BatchSize > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("%w: batch size %d above %d", ErrBadOptions, o.BatchSize, math.MaxInt32))
	}
	if o.Layout == nil {
		errs = append(errs, fmt.Errorf("%w: no layout", ErrBadOptions))
	}
	return errors.Join(errs...)
}

// Batch is one mini-batch of prefix trees (see the package doc for its
// invariants). It is owned by the caller between Take and Recycle.
type Batch struct {
	// Sparse holds the nodes per level and the unique ids per table.
	Sparse *sparsenet.Batch
	// Parent[k][i] is the level-(k+1) node of level-k node i, for k <
	// Levels-1.
	Parent [][]int32
	// N is the number of samples (Sparse.Nodes(0)).
	N int
	// Labels holds the first label of each sample (0 when it has none).
	Labels []float32
	// LabelOffsets and AllLabels hold every label of each sample: sample s
	// has AllLabels[LabelOffsets[s]:LabelOffsets[s+1]].
	LabelOffsets []int32
	AllLabels    []float32
	// End is the position right after the batch's last sample.
	End reader.Position
	// Ends holds, for each stream (Position.File) the batch has samples
	// of, the position right after its last sample in the batch, in the
	// order the streams first appear. A source that interleaves several
	// streams (the partitions of a topic) resumes each from its entry.
	Ends []reader.Position
	// Groups is the number of groups that contributed samples.
	Groups int
	// Digest is the sum of the samples' reader.SampleDigest (their
	// positions in their sources), mod 2^64.
	Digest uint64
}

// setEnd records p as the end of the batch and of p's stream.
func (bt *Batch) setEnd(p reader.Position) {
	bt.End = p
	for i := len(bt.Ends) - 1; i >= 0; i-- { // the last stream is the likely one
		if bt.Ends[i].File == p.File {
			bt.Ends[i] = p
			return
		}
	}
	bt.Ends = append(bt.Ends, p)
}

func (bt *Batch) reset() {
	bt.Sparse.Reset()
	for k := range bt.Parent {
		bt.Parent[k] = bt.Parent[k][:0]
	}
	bt.N, bt.Groups, bt.End, bt.Digest = 0, 0, reader.Position{}, 0
	bt.Ends = bt.Ends[:0]
	bt.Labels, bt.AllLabels = bt.Labels[:0], bt.AllLabels[:0]
	bt.LabelOffsets = append(bt.LabelOffsets[:0], 0)
}

// Stats counts what a Builder has built.
type Stats struct {
	// Samples, Groups and Batches count the samples added, the groups that
	// contributed samples and the batches closed.
	Samples, Groups, Batches int64
	// Nodes[k] is the number of level-k nodes added; Nodes[0] == Samples.
	Nodes []int64
	// Cols[k] is the width of level k's input block.
	Cols []int
}

// Ratio returns the number of samples per level-k node (1 for level 0, 0
// before any node).
func (s Stats) Ratio(k int) float64 {
	if s.Nodes[k] == 0 {
		return 0
	}
	return float64(s.Samples) / float64(s.Nodes[k])
}

// InputRatio returns the ratio of the input cells of uncompressed batches to
// those of the trees, Σ_k Samples·Cols[k] / Σ_k Nodes[k]·Cols[k]: the saving
// in pooling and in the first dense layer's work.
func (s Stats) InputRatio() float64 {
	var flat, tree float64
	for k, c := range s.Cols {
		flat += float64(s.Samples) * float64(c)
		tree += float64(s.Nodes[k]) * float64(c)
	}
	if tree == 0 {
		return 0
	}
	return flat / tree
}

// fieldInfo caches a layout field for the hot loops.
type fieldInfo struct {
	level int32
	dense int32 // width of a dense field, 0 for a sparse one
}

// feats is a list of features: sparse (parallel fields, ids, values) and
// dense (fields, with their vectors concatenated in dvals; widths are the
// layout's).
type feats struct {
	fields  []uint32
	ids     []uint64
	values  []float32
	dfields []uint32
	dvals   []float32
}

func (f *feats) reset() {
	f.fields, f.ids, f.values = f.fields[:0], f.ids[:0], f.values[:0]
	f.dfields, f.dvals = f.dfields[:0], f.dvals[:0]
}

// copyFrom makes f a copy of src, reusing f's buffers.
func (f *feats) copyFrom(src *feats) {
	f.fields = append(f.fields[:0], src.fields...)
	f.ids = append(f.ids[:0], src.ids...)
	f.values = append(f.values[:0], src.values...)
	f.dfields = append(f.dfields[:0], src.dfields...)
	f.dvals = append(f.dvals[:0], src.dvals...)
}

// equal reports whether f and o are the same features, comparing floats bit
// for bit.
func (f *feats) equal(o *feats) bool {
	if len(f.fields) != len(o.fields) || len(f.dfields) != len(o.dfields) || len(f.dvals) != len(o.dvals) {
		return false
	}
	for i, x := range f.fields {
		if x != o.fields[i] {
			return false
		}
	}
	for i, x := range f.ids {
		if x != o.ids[i] {
			return false
		}
	}
	for i, x := range f.dfields {
		if x != o.dfields[i] {
			return false
		}
	}
	return equalBits(f.values, o.values) && equalBits(f.dvals, o.dvals)
}

func equalBits(a, b []float32) bool {
	b = b[:len(a)]
	for i, x := range a {
		if math.Float32bits(x) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// lineFeats returns line i of lv as views into the level.
func lineFeats(lv *reader.Level, i int32) feats {
	var f feats
	f.fields, f.ids, f.values = lv.Line(int(i))
	dlo, dhi := lv.DenseOffsets[i], lv.DenseOffsets[i+1]
	if dlo < dhi {
		start := int32(0)
		if dlo > 0 {
			start = lv.DenseEnds[dlo-1]
		}
		f.dfields, f.dvals = lv.DenseFields[dlo:dhi:dhi], lv.DenseValues[start:lv.DenseEnds[dhi-1]]
	}
	return f
}

// lastNode is the level-k node of the previous sample.
type lastNode struct {
	node    int32 // its index in the open batch; -1 when there is none
	feats   feats // its features: views into the current group (inGroup) or own
	own     feats // buffers owned by the Builder
	inGroup bool
}

// Builder groups samples into batches of prefix trees. Not safe for
// concurrent use.
type Builder struct {
	opts   Options
	levels int
	info   []fieldInfo

	open  *Batch   // the batch being filled; nil when none
	ready []*Batch // closed batches, oldest first
	free  []*Batch // recycled batches

	stats Stats

	// per group
	pure [][]bool // [group level][line]: every feature of the line has the layout level of the line
	// per sample
	path, prevPath []int32    // [group level]: the sample's line
	prevPure       bool       // every line on the previous sample's path is pure
	prevInGroup    bool       // the previous sample is of the current group and in the open batch
	node           []int32    // [layout level]: the current sample's node
	reused         []bool     // [layout level]: the current sample reuses the previous sample's node
	last           []lastNode // [layout level]
	scr            []feats    // [layout level]: the current sample's features when gathered
}

// NewBuilder returns a Builder for opts.
func NewBuilder(opts Options) (*Builder, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	l := opts.Layout
	levels := l.Levels()
	b := &Builder{opts: opts, levels: levels, info: make([]fieldInfo, l.Fields()),
		node: make([]int32, levels+1), reused: make([]bool, levels+1),
		last: make([]lastNode, levels), scr: make([]feats, levels),
		stats: Stats{Nodes: make([]int64, levels), Cols: make([]int, levels)}}
	for f := range b.info {
		b.info[f] = fieldInfo{level: int32(l.Level(f)), dense: int32(l.DenseWidth(f))}
	}
	for k := range b.last {
		b.last[k].node = -1
		lo, hi := l.LevelCols(k)
		b.stats.Cols[k] = hi - lo
	}
	return b, nil
}

// Stats returns counts of what was built so far.
func (b *Builder) Stats() Stats {
	s := b.stats
	s.Nodes = append([]int64(nil), s.Nodes...)
	s.Cols = append([]int(nil), s.Cols...)
	return s
}

// Take returns the next closed batch in order, or nil if there is none. The
// caller owns it until it hands it to Recycle.
func (b *Builder) Take() *Batch {
	if len(b.ready) == 0 {
		return nil
	}
	bt := b.ready[0]
	copy(b.ready, b.ready[1:])
	b.ready[len(b.ready)-1] = nil
	b.ready = b.ready[:len(b.ready)-1]
	return bt
}

// Recycle gives a batch taken from b back for reuse; the caller must not
// use it afterwards.
func (b *Builder) Recycle(bt *Batch) {
	if bt != nil {
		b.free = append(b.free, bt)
	}
}

// Flush closes the open batch, if it has samples; Take then returns it.
func (b *Builder) Flush() {
	if b.open != nil && b.open.N > 0 {
		b.closeOpen()
	}
}

func (b *Builder) closeOpen() {
	b.ready = append(b.ready, b.open)
	b.open = nil
	b.stats.Batches++
	for k := range b.last {
		b.last[k].node = -1
	}
	b.prevInGroup = false
}

func (b *Builder) newBatch() *Batch {
	var bt *Batch
	if n := len(b.free); n > 0 {
		bt = b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
	} else {
		bt = &Batch{Sparse: b.opts.Layout.NewBatch(), Parent: make([][]int32, b.levels-1)}
	}
	bt.reset()
	return bt
}

// Add adds the samples of g from g.Pos.Index on, closing batches as they
// fill. It keeps no reference to g. Invalid data gives an error naming g.Pos,
// and then nothing of g is added.
func (b *Builder) Add(g *reader.Group) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("compress: group at %v: %w", g.Pos, err)
	}
	if err := b.scan(g); err != nil {
		return fmt.Errorf("compress: group at %v: %w", g.Pos, err)
	}
	n := g.NumSamples()
	if g.Pos.Index >= n {
		return nil
	}
	G := len(g.Levels)
	if cap(b.path) < G {
		b.path, b.prevPath = make([]int32, G), make([]int32, G)
	}
	b.path, b.prevPath = b.path[:G], b.prevPath[:G]
	b.prevInGroup = false
	b.stats.Groups++
	counted := false
	stream := reader.StreamHash(g.Pos.File)
	for j := g.Pos.Index; j < n; j++ {
		if b.open == nil {
			b.open = b.newBatch()
			counted = false
		}
		bt := b.open
		if !counted {
			bt.Groups++
			counted = true
		}
		pure := b.samplePath(g, j)
		if !pure {
			b.gather(g)
		}
		b.addUpper(bt, g, pure)
		b.addSample(bt, g, j, pure, stream)
		if bt.N == b.opts.BatchSize {
			bt.setEnd(endAfter(g, j))
			b.closeOpen()
		}
	}
	if b.open != nil && b.open.N > 0 {
		b.open.setEnd(g.Next)
	}
	b.ownLast()
	b.prevInGroup = false
	return nil
}

// samplePath sets b.path to the lines of sample j of g, one per group
// level, and reports whether they are all pure.
func (b *Builder) samplePath(g *reader.Group, j int) bool {
	b.path[0] = int32(j)
	pure := b.pure[0][j]
	for m := 1; m < len(g.Levels); m++ {
		b.path[m] = g.Levels[m-1].Parent[b.path[m-1]]
		pure = pure && b.pure[m][b.path[m]]
	}
	return pure
}

// addUpper sets the current sample's nodes on the upper layout levels, top
// down, into bt: a level reuses the previous sample's node when every level
// above it did and its features are the same, and adds a node otherwise.
// The features are the sample's lines of g when pure, else those gather
// left in b.scr.
func (b *Builder) addUpper(bt *Batch, g *reader.Group, pure bool) {
	G, L := len(g.Levels), b.levels
	b.reused[L] = true
	for k := L - 1; k >= 1; k-- {
		last := &b.last[k]
		reuse := last.node >= 0 && b.reused[k+1]
		// The same pure line of the same group has the same features.
		fast := reuse && pure && b.prevPure && b.prevInGroup && k < G && b.path[k] == b.prevPath[k]
		var cur feats
		if !fast {
			switch {
			case !pure:
				cur = b.scr[k]
			case k < G:
				cur = lineFeats(&g.Levels[k], b.path[k])
			}
			reuse = reuse && cur.equal(&last.feats)
		}
		b.reused[k] = reuse
		if reuse {
			b.node[k] = last.node
			continue
		}
		b.node[k] = b.addNode(bt, k, &cur)
		last.node = b.node[k]
		switch {
		case !pure:
			last.own, b.scr[k] = b.scr[k], last.own
			last.feats, last.inGroup = last.own, false
		default:
			last.feats, last.inGroup = cur, k < G
		}
	}
}

// addSample adds sample j of g to bt as a level-0 node, with its labels and
// digest (stream is the hash of g.Pos.File), and makes it the previous
// sample.
func (b *Builder) addSample(bt *Batch, g *reader.Group, j int, pure bool, stream uint64) {
	var cur feats
	if pure {
		cur = lineFeats(&g.Levels[0], int32(j))
	} else {
		cur = b.scr[0]
	}
	b.addNode(bt, 0, &cur)
	bt.N++
	bt.Digest += reader.SampleDigest(stream, g.Pos.Offset, j)
	bt.Labels = append(bt.Labels, g.Label(j))
	bt.AllLabels = append(bt.AllLabels, g.SampleLabels(j)...)
	bt.LabelOffsets = append(bt.LabelOffsets, int32(len(bt.AllLabels)))
	b.stats.Samples++
	b.prevPure, b.prevInGroup = pure, true
	copy(b.prevPath, b.path)
}

// ownLast copies the features of the previous sample's nodes that are
// views into the current group into the Builder's own buffers: the caller
// may refill the group, and the next one compares against them.
func (b *Builder) ownLast() {
	for k := range b.last {
		if last := &b.last[k]; last.inGroup {
			last.own.copyFrom(&last.feats)
			last.feats, last.inGroup = last.own, false
		}
	}
}

// endAfter is the position right after sample j of g.
func endAfter(g *reader.Group, j int) reader.Position {
	if j == g.NumSamples()-1 {
		return g.Next
	}
	return reader.Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: j + 1}
}

// addNode adds a node of level k with features f to bt under the current
// sample's level-(k+1) node and returns its index.
func (b *Builder) addNode(bt *Batch, k int, f *feats) int32 {
	sp := bt.Sparse
	node, err := sp.AddNode(k, f.fields, f.ids, f.values)
	if err != nil {
		panic(fmt.Sprintf("compress: scanned features refused: %v", err))
	}
	off := 0
	for _, field := range f.dfields {
		w := int(b.info[field].dense)
		if err := sp.SetDense(k, node, field, f.dvals[off:off+w]); err != nil {
			panic(fmt.Sprintf("compress: scanned dense feature refused: %v", err))
		}
		off += w
	}
	if k < b.levels-1 {
		bt.Parent[k] = append(bt.Parent[k], b.node[k+1])
	}
	b.stats.Nodes[k]++
	return int32(node)
}

// gather sorts the features of the current sample's lines (b.path) into
// b.scr by layout level.
func (b *Builder) gather(g *reader.Group) {
	for k := range b.scr {
		b.scr[k].reset()
	}
	for m := range g.Levels {
		lv := &g.Levels[m]
		i := b.path[m]
		lo, hi := lv.Offsets[i], lv.Offsets[i+1]
		fields, ids, values := lv.Fields[lo:hi], lv.IDs[lo:hi], lv.Values[lo:hi]
		for a := 0; a < len(fields); { // runs of one level
			level := b.info[fields[a]].level
			e := a + 1
			for e < len(fields) && b.info[fields[e]].level == level {
				e++
			}
			s := &b.scr[level]
			s.fields = append(s.fields, fields[a:e]...)
			s.ids = append(s.ids, ids[a:e]...)
			s.values = append(s.values, values[a:e]...)
			a = e
		}
		for j := lv.DenseOffsets[i]; j < lv.DenseOffsets[i+1]; j++ {
			f := lv.DenseFields[j]
			s := &b.scr[b.info[f].level]
			end := lv.DenseEnds[j]
			s.dfields = append(s.dfields, f)
			s.dvals = append(s.dvals, lv.DenseValues[end-b.info[f].dense:end]...)
		}
	}
}

// scan checks every feature of g against the layout and records which lines
// are pure (every feature of a line of group level m has layout level m).
func (b *Builder) scan(g *reader.Group) error {
	for len(b.pure) < len(g.Levels) {
		b.pure = append(b.pure, nil)
	}
	nf := len(b.info)
	for m := range g.Levels {
		lv := &g.Levels[m]
		n := lv.Len()
		p := b.pure[m][:0]
		for i := 0; i < n; i++ {
			var other int32 // non-zero when a feature has another level than m
			for _, f := range lv.Fields[lv.Offsets[i]:lv.Offsets[i+1]] {
				if int(f) >= nf {
					return fmt.Errorf("level %d line %d: %w: field %d, the model has %d", m, i, sparsenet.ErrUnknownField, f, nf)
				}
				fi := b.info[f]
				if fi.dense > 0 {
					return fmt.Errorf("level %d line %d: %w: field %d is dense, the data gives it an id", m, i, sparsenet.ErrUnknownField, f)
				}
				other |= fi.level ^ int32(m)
			}
			pure := other == 0
			for j := lv.DenseOffsets[i]; j < lv.DenseOffsets[i+1]; j++ {
				f := lv.DenseFields[j]
				start := int32(0)
				if j > 0 {
					start = lv.DenseEnds[j-1]
				}
				switch w := lv.DenseEnds[j] - start; {
				case int(f) >= nf:
					return fmt.Errorf("level %d line %d: %w: dense field %d, the model has %d", m, i, sparsenet.ErrUnknownField, f, nf)
				case b.info[f].dense == 0:
					return fmt.Errorf("level %d line %d: %w: field %d is sparse, the data gives it a vector", m, i, sparsenet.ErrUnknownField, f)
				case w != b.info[f].dense:
					return fmt.Errorf("level %d line %d: %w: field %d has width %d, the data gives %d values", m, i, sparsenet.ErrDenseWidth, f, b.info[f].dense, w)
				}
				pure = pure && int(b.info[f].level) == m
			}
			p = append(p, pure)
		}
		b.pure[m] = p
	}
	return nil
}
