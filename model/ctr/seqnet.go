package ctr

import (
	"fmt"
	"math"
	"slices"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/sparsenet"
)

// The behaviour-history part of kinds din and dien (config model.sequence).
// The layout holds the history fields (and DIEN's negatives) as sequence
// fields of one level h (sparsenet.FieldSpec.SeqLen): per level-h node, L
// positions of each field, then its length. A position's history vector
// e_t is the history fields' embeddings there, concatenated (width D); a
// sample's query q is its target fields' embeddings, concatenated, found
// at the target fields' levels. Then, with node(s) the level-h ancestor
// of sample s and n its history's length:
//
//	din:  v_s = Σ_{t<n} w_t(s)·e_t,   w_t(s) = LAU(e_t, q_s)   (raw weights)
//	dien: h_t = GRU(e_1..e_t)                  once per level-h node
//	      a_t(s) = softmax_{t<n} LAU(h_t, q_s)
//	      v_s = AUGRU(h_1..h_n; a(s)) at step n-1, and the node's Σ_t e_t
//
// LAU is the local activation unit (densenet.Attention) on [x, q, x-q,
// x*q]. The MLP reads every column of the layout but the history's and
// the negatives', plus v_s (D columns at the start of level 0's block)
// and, for dien, the history's sum (D columns at the end of level h's): a
// Tree of those blocks, so the MLP's first layer still runs once per
// node. With the history at the top level (a user's), the flat expansion
// of that tree has the column order of the one-level model's: v, the
// layout's columns in order, the sum. So the
// history's GRU and sum run once per user node and only the attention
// and the AUGRU per sample: a compressed batch computes what its flat
// expansion does.
//
// DIEN's auxiliary loss (Zhou et al. 2019, eq. 4), with the negatives ê:
//
//	aux = α/b · Σ_s mean_{t<n-1} −[log σ(h_t·e_{t+1}) + log(1 − σ(h_t·ê_{t+1}))]
//
// over the b samples of the batch, computed once per node and weighed by
// its samples (so again as in the flat batch). It enters the gradient
// only (Backward); the reported loss is the click loss.
//
// The dense parameters are the MLP's, then the attention unit's, then
// (dien) the GRU's and the AUGRU's.
type seqNet struct {
	dien     bool
	L, D     int // positions, width of a position's vector
	level    int // the history's level
	hist     []seqField
	neg      []seqField // dien's negatives (nil without the auxiliary loss)
	tgt      []seqField // the targets (col: within their level's block)
	lenCol   int        // the history's length column, in its level's block
	skip     []bool     // by column of the layout: read by this part only
	att      *densenet.Attention
	gru, aug *densenet.GRU
	aux      float32
	cols     []int // the MLP tree's level columns
	deepCols []int // by level: the MLP columns taken from the layout
}

// seqField is one history, negative or target field: its level, its first
// column within the level's block, its dim, and its offset in the
// position's (or query's) vector.
type seqField struct{ level, col, dim, off int }

// newSeqNet builds the history part of cfg on layout l.
func newSeqNet(cfg config.Config, l *sparsenet.Layout) (*seqNet, error) {
	s := cfg.Model.Sequence
	sn := &seqNet{dien: cfg.Model.Kind == config.KindDIEN, L: s.MaxLen, skip: make([]bool, l.Width())}
	var err error
	if sn.hist, err = sn.fields(l, s.History, s.History, "history"); err != nil {
		return nil, err
	}
	if sn.tgt, err = sn.fields(l, s.Target, s.History, "target"); err != nil {
		return nil, err
	}
	last := sn.hist[len(sn.hist)-1]
	sn.level, sn.D = sn.hist[0].level, last.off+last.dim
	if sn.dien && *s.AuxWeight > 0 {
		if sn.neg, err = sn.fields(l, s.Negatives, s.History, "negatives"); err != nil {
			return nil, err
		}
		sn.aux = float32(*s.AuxWeight)
	}
	for _, list := range [][]int{s.History, s.Negatives} {
		for i, f := range list {
			if l.Level(f) != sn.level {
				return nil, fmt.Errorf("ctr: model.sequence: field %d is of level %d, history field %d of level %d: a history's fields share a level",
					f, l.Level(f), s.History[0], sn.level)
			}
			if l.SeqLen(f) != sn.L {
				return nil, fmt.Errorf("ctr: model.sequence: field %d (%d) is not a sequence field of %d positions", f, i, sn.L)
			}
			lo, hi := l.Cols(f)
			base, _ := l.LevelCols(sn.level)
			for c := base + lo; c < base+hi; c++ {
				sn.skip[c] = true
			}
		}
	}
	sn.lenCol = sn.hist[0].col + sn.L*sn.hist[0].dim
	if err := sn.newBlocks(s); err != nil {
		return nil, err
	}
	sn.treeCols(l)
	return sn, nil
}

// fields resolves the fields of one list of model.sequence; their tables
// must be those of the history fields they pair with (same ids, same
// rows), and they must be sparse.
func (*seqNet) fields(l *sparsenet.Layout, list, hist []int, what string) ([]seqField, error) {
	out := make([]seqField, len(list))
	off := 0
	for i, f := range list {
		if f >= l.Fields() {
			return nil, fmt.Errorf("ctr: model.sequence.%s: field %d, the model has %d fields", what, f, l.Fields())
		}
		t := l.Table(f)
		if t < 0 {
			return nil, fmt.Errorf("ctr: model.sequence.%s: field %d is dense; a history and its candidate are sparse fields", what, f)
		}
		if ht := l.Table(hist[i]); ht != t {
			return nil, fmt.Errorf("ctr: model.sequence.%s: field %d uses table %d but history field %d uses table %d: they share ids and must share a table (model.field_tables)",
				what, f, t, hist[i], ht)
		}
		lo, _ := l.Cols(f)
		out[i] = seqField{level: l.Level(f), col: lo, dim: l.Dim(t), off: off}
		off += l.Dim(t)
	}
	return out, nil
}

// newBlocks makes the attention unit and DIEN's GRU and AUGRU.
func (sn *seqNet) newBlocks(s config.SequenceConfig) error {
	var err error
	if sn.att, err = densenet.NewAttention(sn.D, s.Attention, sn.dien); err != nil {
		return fmt.Errorf("ctr: %w", err)
	}
	if !sn.dien {
		return nil
	}
	if sn.gru, err = densenet.NewGRU(sn.D, sn.D, false); err != nil {
		return fmt.Errorf("ctr: %w", err)
	}
	if sn.aug, err = densenet.NewGRU(sn.D, sn.D, true); err != nil {
		return fmt.Errorf("ctr: %w", err)
	}
	return nil
}

// treeCols sets the MLP tree's columns: by level, the layout's columns
// that are not the history's, plus v (level 0) and dien's history sum
// (level h).
func (sn *seqNet) treeCols(l *sparsenet.Layout) {
	L := l.Levels()
	sn.cols, sn.deepCols = make([]int, L+1), make([]int, L)
	for k := range L {
		lo, hi := l.LevelCols(k)
		for c := lo; c < hi; c++ {
			if !sn.skip[c] {
				sn.deepCols[k]++
			}
		}
		sn.cols[k+1] = sn.cols[k] + sn.deepCols[k] + sn.extra(k)
	}
}

// extra is the width of the vectors the history adds to level k's block.
func (sn *seqNet) extra(k int) int { return sn.pre(k) + sn.post(k) }

// pre is the width of v at the start of level k's block (level 0's).
func (sn *seqNet) pre(k int) int {
	if k == 0 {
		return sn.D
	}
	return 0
}

// post is the width of dien's history sum at the end of level k's block
// (level h's).
func (sn *seqNet) post(k int) int {
	if sn.dien && k == sn.level {
		return sn.D
	}
	return 0
}

// inWidth is the MLP's input width.
func (sn *seqNet) inWidth() int { return sn.cols[len(sn.cols)-1] }

// numParams is the number of the history part's dense parameters.
func (sn *seqNet) numParams() int {
	p := sn.att.NumParams()
	if sn.dien {
		p += sn.gru.NumParams() + sn.aug.NumParams()
	}
	return p
}

// split returns the attention unit's, the GRU's and the AUGRU's shares of
// the history part's parameters p.
func (sn *seqNet) split(p []float32) (att, gru, aug []float32) {
	a := sn.att.NumParams()
	att = p[:a]
	if sn.dien {
		g := sn.gru.NumParams()
		gru, aug = p[a:a+g], p[a+g:a+g+sn.aug.NumParams()]
	}
	return att, gru, aug
}

func (sn *seqNet) init(p []float32, seed uint64) {
	att, gru, aug := sn.split(p)
	sn.att.Init(att, seed+2)
	if sn.dien {
		sn.gru.Init(gru, seed+3)
		sn.aug.Init(aug, seed+4)
	}
}

func (sn *seqNet) describe(hidden []int) string {
	kind, att := "din", fmt.Sprintf("attention %v over", sn.att.Hidden)
	if sn.dien {
		kind, att = "dien", fmt.Sprintf("GRU + attention %v + AUGRU over", sn.att.Hidden)
	}
	aux := ""
	if sn.aux > 0 {
		aux = fmt.Sprintf(", auxiliary loss x%g", sn.aux)
	}
	return fmt.Sprintf("%s (%s a history of %d x %d, MLP %v%s)", kind, att, sn.L, sn.D, hidden, aux)
}

// seqWorkspace holds one goroutine's buffers of the history part.
type seqWorkspace struct {
	att      *densenet.AttentionWorkspace
	gru, aug *densenet.GRUWorkspace
	// The MLP's tree and its gradient, by level.
	x, dx [][]float32
	tree  densenet.Tree
	// By level-h node: the history (keys), its gradient, the negatives and
	// theirs, the lengths, the GRU's states and their gradient; the
	// number of samples below each node.
	keys, dkeys, negs, dnegs, dpos, hs, dhs []float32
	lens                                    []int32
	below                                   []float32
	// By sample: its level-h node, query and its gradient, attention
	// scores and their gradient, v and its gradient; dien: the AUGRU's
	// states and their gradient.
	node                                   []int32
	q, dq, scores, dscores, v, dv, ho, dho []float32
	anc                                    []int32 // a sample's ancestor, while walking up
	auxLoss                                float64
}

func (sn *seqNet) newWorkspace(levels, threads int) *seqWorkspace {
	ws := &seqWorkspace{att: sn.att.NewWorkspace(1, 1, sn.L), x: make([][]float32, levels), dx: make([][]float32, levels)}
	ws.att.Threads = threads
	ws.tree = densenet.Tree{Cols: sn.cols, Count: make([]int, levels), X: ws.x}
	if sn.dien {
		ws.gru, ws.aug = sn.gru.NewWorkspace(1, 1, sn.L), sn.aug.NewWorkspace(1, 1, sn.L)
		ws.gru.Threads, ws.aug.Threads = threads, threads
	}
	return ws
}

// ancestors sets ws.anc to the level-k ancestor of every sample.
func ancestors(ws *seqWorkspace, t densenet.Tree, k int) []int32 {
	b := t.Count[0]
	ws.anc = grow(ws.anc, b)
	for s := range b {
		a := int32(s)
		for j := 0; j < k; j++ {
			a = t.Parent[j][a]
		}
		ws.anc[s] = a
	}
	return ws.anc
}

// gather fills ws from the layout's tree t: the MLP tree's blocks (the
// layout's columns but the history's), the history and negatives by
// level-h node, the queries and the samples' nodes.
func (sn *seqNet) gather(ws *seqWorkspace, t densenet.Tree) {
	nodes, b := t.Count[sn.level], t.Count[0]
	for k, c := range t.Count {
		w := sn.cols[k+1] - sn.cols[k]
		ws.x[k], ws.dx[k] = grow(ws.x[k], c*w), grow(ws.dx[k], c*w)
		ws.tree.Count[k] = c
		lo, src := t.Cols[k], t.Cols[k+1]-t.Cols[k]
		for i := range c {
			row, dst := t.X[k][i*src:(i+1)*src], ws.x[k][i*w+sn.pre(k):]
			j := 0
			for col, v := range row {
				if !sn.skip[lo+col] {
					dst[j] = v
					j++
				}
			}
		}
	}
	ws.tree.Parent = t.Parent
	size := nodes * sn.L * sn.D
	ws.keys, ws.lens = grow(ws.keys, size), grow(ws.lens, nodes)
	sn.positions(ws.keys, sn.hist, t)
	if sn.neg != nil {
		ws.negs = grow(ws.negs, size)
		sn.positions(ws.negs, sn.neg, t)
	}
	w := t.Cols[sn.level+1] - t.Cols[sn.level]
	for j := range nodes {
		ws.lens[j] = int32(t.X[sn.level][j*w+sn.lenCol])
	}
	ws.node = append(ws.node[:0], ancestors(ws, t, sn.level)...)
	ws.q = grow(ws.q, b*sn.D)
	for _, f := range sn.tgt {
		anc := ancestors(ws, t, f.level)
		w := t.Cols[f.level+1] - t.Cols[f.level]
		for s := range b {
			copy(ws.q[s*sn.D+f.off:][:f.dim], t.X[f.level][int(anc[s])*w+f.col:][:f.dim])
		}
	}
}

// positions copies the fields' positions from the history level's blocks
// into dst (nodes x L x D).
func (sn *seqNet) positions(dst []float32, fields []seqField, t densenet.Tree) {
	w := t.Cols[sn.level+1] - t.Cols[sn.level]
	x := t.X[sn.level]
	for j := range t.Count[sn.level] {
		for p := range sn.L {
			row := dst[(j*sn.L+p)*sn.D:]
			for _, f := range fields {
				copy(row[f.off:f.off+f.dim], x[j*w+f.col+p*f.dim:][:f.dim])
			}
		}
	}
}

// forward computes the MLP's input tree in ws from the layout's tree t.
func (sn *seqNet) forward(ws *seqWorkspace, params []float32, t densenet.Tree) densenet.Tree {
	sn.gather(ws, t)
	nodes, b, D := t.Count[sn.level], t.Count[0], sn.D
	pa, pg, pu := sn.split(params)
	ws.scores, ws.v = grow(ws.scores, b*sn.L), grow(ws.v, b*D)
	if !sn.dien {
		sn.att.Forward(ws.att, pa, ws.keys, ws.lens, sn.L, ws.q, ws.node, b, ws.scores)
		densenet.AttentionPool(ws.v, ws.keys, ws.lens, sn.L, D, ws.node, ws.scores)
	} else {
		ws.hs, ws.ho = grow(ws.hs, nodes*sn.L*D), grow(ws.ho, b*sn.L*D)
		sn.gru.Forward(ws.gru, pg, ws.keys, ws.lens, sn.L, nil, nodes, nil, ws.hs)
		sn.att.Forward(ws.att, pa, ws.hs, ws.lens, sn.L, ws.q, ws.node, b, ws.scores)
		sn.aug.Forward(ws.aug, pu, ws.hs, ws.lens, sn.L, ws.node, b, ws.scores, ws.ho)
		for s := range b {
			clear(ws.v[s*D : (s+1)*D])
			if n := int(ws.lens[ws.node[s]]); n > 0 {
				copy(ws.v[s*D:(s+1)*D], ws.ho[(s*sn.L+n-1)*D:])
			}
		}
		sn.sumHistory(ws, nodes)
	}
	w0 := sn.cols[1]
	for s := range b {
		copy(ws.x[0][s*w0:s*w0+D], ws.v[s*D:(s+1)*D])
	}
	return ws.tree
}

// sumHistory writes dien's history sum, Σ_{t<n} e_t, at the end of each
// level-h node's MLP block.
func (sn *seqNet) sumHistory(ws *seqWorkspace, nodes int) {
	w, D := sn.cols[sn.level+1]-sn.cols[sn.level], sn.D
	off := sn.pre(sn.level) + sn.deepCols[sn.level]
	for j := range nodes {
		sum := ws.x[sn.level][j*w+off : j*w+off+D]
		clear(sum)
		for p := range int(ws.lens[j]) {
			densenet.Axpy(sum, 1, ws.keys[(j*sn.L+p)*D:(j*sn.L+p+1)*D])
		}
	}
}

// backward takes the MLP tree's gradient ws.dx (after the MLP's
// BackwardTree) through the history part: it writes the part's
// parameter gradient grad and the layout's gradient dX (every column).
func (sn *seqNet) backward(ws *seqWorkspace, params []float32, t densenet.Tree, grad []float32, dX [][]float32) {
	nodes, b, D := t.Count[sn.level], t.Count[0], sn.D
	pa, pg, pu := sn.split(params)
	ga, gg, gu := sn.split(grad)
	size := nodes * sn.L * D
	ws.dkeys, ws.dq, ws.dv, ws.dscores = grow(ws.dkeys, size), grow(ws.dq, b*D), grow(ws.dv, b*D), grow(ws.dscores, b*sn.L)
	clear(ws.dq)
	w0 := sn.cols[1]
	for s := range b {
		copy(ws.dv[s*D:(s+1)*D], ws.dx[0][s*w0:s*w0+D])
	}
	if !sn.dien {
		densenet.AttentionPoolBackward(ws.dkeys, ws.dscores, ws.keys, ws.lens, sn.L, D, ws.node, ws.scores, ws.dv, 0)
		sn.att.Backward(ws.att, pa, ws.keys, ws.lens, sn.L, ws.q, ws.node, b, ws.dscores, ga, ws.dkeys, ws.dq)
	} else {
		sn.backwardDIEN(ws, t, pa, pg, pu, ga, gg, gu)
	}
	sn.scatter(ws, t, dX)
}

// backwardDIEN is backward's dien part: AUGRU, attention, the auxiliary
// loss, the history sum and the GRU, into ws.dkeys, ws.dnegs and ws.dq.
func (sn *seqNet) backwardDIEN(ws *seqWorkspace, t densenet.Tree, pa, pg, pu, ga, gg, gu []float32) {
	nodes, b, D, L := t.Count[sn.level], t.Count[0], sn.D, sn.L
	ws.dho, ws.dhs = grow(ws.dho, b*L*D), grow(ws.dhs, nodes*L*D)
	clear(ws.dho)
	for s := range b {
		if n := int(ws.lens[ws.node[s]]); n > 0 {
			copy(ws.dho[(s*L+n-1)*D:(s*L+n)*D], ws.dv[s*D:(s+1)*D])
		}
	}
	sn.aug.Backward(ws.aug, pu, ws.hs, ws.lens, L, ws.node, b, ws.scores, ws.dho, gu, ws.dhs, ws.dscores)
	sn.att.Backward(ws.att, pa, ws.hs, ws.lens, L, ws.q, ws.node, b, ws.dscores, ga, ws.dhs, ws.dq)
	if sn.neg != nil {
		ws.dnegs, ws.dpos = grow(ws.dnegs, nodes*L*D), grow(ws.dpos, nodes*L*D)
		clear(ws.dnegs)
		clear(ws.dpos)
		sn.auxGrad(ws, t)
	}
	sn.gru.Backward(ws.gru, pg, ws.keys, ws.lens, L, nil, nodes, nil, ws.dhs, gg, ws.dkeys, nil)
	if sn.neg != nil {
		densenet.Axpy(ws.dkeys, 1, ws.dpos)
	}
	w, off := sn.cols[sn.level+1]-sn.cols[sn.level], sn.pre(sn.level)+sn.deepCols[sn.level]
	for j := range nodes { // the history sum's gradient
		dsum := ws.dx[sn.level][j*w+off : j*w+off+D]
		for p := range int(ws.lens[j]) {
			densenet.Axpy(ws.dkeys[(j*L+p)*D:(j*L+p+1)*D], 1, dsum)
		}
	}
}

// auxGrad adds the auxiliary loss's gradient to the GRU states' (ws.dhs),
// the positives' (ws.dpos, added to the history's after the GRU's
// backward, which overwrites it) and the negatives' (ws.dnegs), and sets
// ws.auxLoss. A node's weight is aux x its samples / b.
func (sn *seqNet) auxGrad(ws *seqWorkspace, t densenet.Tree) {
	nodes, b, D, L := t.Count[sn.level], t.Count[0], sn.D, sn.L
	ws.below = grow(ws.below, nodes)
	clear(ws.below)
	for _, j := range ws.node {
		ws.below[j]++
	}
	ws.auxLoss = 0
	for j := range nodes {
		n := int(ws.lens[j])
		if n < 2 || ws.below[j] == 0 {
			continue
		}
		wt := sn.aux * ws.below[j] / float32(b) / float32(n-1)
		for p := 0; p < n-1; p++ {
			h, dh := ws.hs[(j*L+p)*D:(j*L+p+1)*D], ws.dhs[(j*L+p)*D:(j*L+p+1)*D]
			at := (j*L + p + 1) * D
			pos, neg := ws.keys[at:at+D], ws.negs[at:at+D]
			sp, sq := densenet.Sigmoid(densenet.Dot(h, pos)), densenet.Sigmoid(densenet.Dot(h, neg))
			ws.auxLoss -= float64(wt) * (math.Log(float64(max(sp, 1e-12))) + math.Log(float64(max(1-sq, 1e-12))))
			gp, gn := wt*(sp-1), wt*sq
			densenet.Axpy(dh, gp, pos)
			densenet.Axpy(dh, gn, neg)
			densenet.Axpy(ws.dpos[at:at+D], gp, h)
			densenet.Axpy(ws.dnegs[at:at+D], gn, h)
		}
	}
}

// scatter writes the layout's gradient dX: the MLP's gradient for the
// columns it reads, plus the queries' gradient at the targets' columns;
// the history's gradient at its positions (0 at the length columns).
func (sn *seqNet) scatter(ws *seqWorkspace, t densenet.Tree, dX [][]float32) {
	for k, c := range t.Count {
		lo, src, w := t.Cols[k], t.Cols[k+1]-t.Cols[k], sn.cols[k+1]-sn.cols[k]
		for i := range c {
			row, from := dX[k][i*src:(i+1)*src], ws.dx[k][i*w+sn.pre(k):]
			j := 0
			for col := range row {
				if sn.skip[lo+col] {
					row[col] = 0
				} else {
					row[col] = from[j]
					j++
				}
			}
		}
	}
	b, D := t.Count[0], sn.D
	for _, f := range sn.tgt {
		anc := ancestors(ws, t, f.level)
		w := t.Cols[f.level+1] - t.Cols[f.level]
		for s := range b {
			densenet.Axpy(dX[f.level][int(anc[s])*w+f.col:][:f.dim], 1, ws.dq[s*D+f.off:][:f.dim])
		}
	}
	sn.unpositions(dX, ws.dkeys, sn.hist, t)
	if sn.neg != nil {
		sn.unpositions(dX, ws.dnegs, sn.neg, t)
	}
}

// unpositions is positions' adjoint: it writes src's positions into the
// history level's gradient blocks.
func (sn *seqNet) unpositions(dX [][]float32, src []float32, fields []seqField, t densenet.Tree) {
	w := t.Cols[sn.level+1] - t.Cols[sn.level]
	dx := dX[sn.level]
	for j := range t.Count[sn.level] {
		for p := range sn.L {
			row := src[(j*sn.L+p)*sn.D:]
			for _, f := range fields {
				copy(dx[j*w+f.col+p*f.dim:][:f.dim], row[f.off:f.off+f.dim])
			}
		}
	}
}

// isSeqField reports whether field f is a history or negatives field of
// cfg's sequence model (a sequence field of the layout).
func isSeqField(cfg config.Config, f int) bool {
	s := cfg.Model.Sequence
	return config.IsSequence(cfg.Model.Kind) && (slices.Contains(s.History, f) || slices.Contains(s.Negatives, f))
}
