package ctr

import (
	"fmt"

	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/sparsenet"
)

// Net is the network of a model, as its config and input shape make it:
// the layout of the pooled input and the dense blocks of model.kind. The
// trainer and a server (package serve) build it the same way, so that a
// server scores as the trainer's evaluation does.
//
// A sample's logit, with x its pooled fields concatenated:
//
//	mlp, lr:  MLP(x)              (lr: no hidden layer, a linear layer)
//	fm:       MLP(x) + FM(x)      (MLP: no hidden layer)
//	deepfm:   MLP(x) + FM(x)
//	dcnv2:    MLP(Cross(x))
//	wdl:      MLP(x)
//	din:      MLP(x', v)          (v: attention over the history, seqnet.go)
//	dien:     MLP(x', v, Σ e_t)   (v: GRU, attention, AUGRU over the history)
//
// where x' is x without the history's sequence fields.
//
// plus, with the wide part (config model.wide: fm, deepfm and wdl by
// default), w(.): the sum of the dim-1 weights of the sample's IDs. The
// layout pools them into mirror fields (sparsenet.FieldSpec.From), whose
// columns end each level's block; the Net splits them off (copying each
// node's other columns, x, into a tree of their own) and sums them per
// node, once, then per sample over its ancestors.
//
// FM is the factorization machine's second-order term over the fields'
// embeddings (densenet.FMWorkspace), computed once per node of a
// compressed batch; MLP's first layer is too (densenet.MLP.ForwardTree).
// Cross multiplies by the whole row, so dcnv2 expands the batch to one
// row per sample first (densenet.ExpandTree) and takes the gradient back
// to the nodes (densenet.ReduceTree).
//
// The dense parameters are the MLP's, then Cross's or the history
// part's.
type Net struct {
	// Layout is the input's layout: fields, levels, their columns.
	Layout *sparsenet.Layout
	// Cols are the input columns by level, for densenet.Tree: level k's
	// are [Cols[k], Cols[k+1]).
	Cols []int

	kind string
	mlp  *densenet.MLP
	// cross is dcnv2's cross layers (nil for the other kinds).
	cross *densenet.Cross
	// fmDim is the fields' embedding dim for kinds fm and deepfm, whose FM
	// term covers every field (0 for the other kinds).
	fmDim int
	// wide says the layout has the wide part's mirror fields: level k's
	// last wideCols[k] columns; deepCols are the columns of the other
	// fields by level, as Cols (nil without the wide part).
	wide     bool
	wideCols []int
	deepCols []int
	wideCol  []bool // by column of the layout: the wide part's
	// seq is the behaviour-history part of kinds din and dien (nil for
	// the other kinds; see seqnet.go).
	seq *seqNet
}

// NewNet builds the network of cfg (defaults filled) for inputs of shape.
func NewNet(cfg config.Config, shape Shape) (*Net, error) {
	layout, err := NewLayout(cfg, shape)
	if err != nil {
		return nil, err
	}
	n := &Net{Layout: layout, kind: cfg.Model.Kind, Cols: make([]int, layout.Levels()+1)}
	for k := 0; k < layout.Levels(); k++ {
		_, n.Cols[k+1] = layout.LevelCols(k)
	}
	w := layout.Width()
	if cfg.Model.HasWide() {
		n.splitWide()
		w = n.deepCols[len(n.deepCols)-1]
	}
	switch n.kind {
	case config.KindFM, config.KindDeepFM:
		if n.fmDim, err = fmDimOf(cfg, shape); err != nil {
			return nil, err
		}
	case config.KindDCNv2:
		if n.cross, err = densenet.NewCross(w, cfg.Model.CrossLayers); err != nil {
			return nil, fmt.Errorf("ctr: %w", err)
		}
	case config.KindDIN, config.KindDIEN:
		if n.seq, err = newSeqNet(cfg, layout); err != nil {
			return nil, err
		}
		w = n.seq.inWidth()
	}
	sizes := append([]int{w}, cfg.Model.Hidden...)
	if n.mlp, err = densenet.NewMLP(append(sizes, 1)); err != nil {
		return nil, fmt.Errorf("ctr: %w", err)
	}
	if p := n.NumParams(); p > maxDenseParams {
		return nil, fmt.Errorf("ctr: the dense network (%s, MLP %v) would have %d parameters, more than %d", n.kind, n.mlp.Sizes, p, maxDenseParams)
	}
	return n, nil
}

// fmDimOf returns the one embedding dim of every field, which the FM term
// needs (its interactions are dot products of the fields' rows).
func fmDimOf(cfg config.Config, shape Shape) (int, error) {
	for f, w := range shape.DenseWidths {
		if w > 0 {
			return 0, fmt.Errorf("ctr: model.kind %s needs every field to be sparse, but field %d is dense", cfg.Model.Kind, f)
		}
	}
	dim := cfg.Model.Tables[0].Dim
	for _, tb := range cfg.Model.Tables {
		if tb.Name == config.WideTable && cfg.Model.HasWide() {
			continue
		}
		if tb.Dim != dim {
			return 0, fmt.Errorf("ctr: model.kind %s needs one embedding dim for every field, but table %s has dim %d and table %s dim %d",
				cfg.Model.Kind, cfg.Model.Tables[0].Name, dim, tb.Name, tb.Dim)
		}
	}
	return dim, nil
}

// NumParams returns the number of dense parameters.
func (n *Net) NumParams() int {
	p := n.mlp.NumParams()
	if n.cross != nil {
		p += n.cross.NumParams()
	}
	if n.seq != nil {
		p += n.seq.numParams()
	}
	return p
}

// Init writes the initial dense parameters into params. lr's linear
// layer starts at weights 1 and bias 0, so that the logit starts as the
// sum of the rows (a weight per ID): the rows and the layer both starting
// near 0 would make a product of two small factors that learns slowly.
func (n *Net) Init(params []float32, seed uint64) {
	m := n.mlp.NumParams()
	n.mlp.Init(params[:m], seed)
	if n.kind == config.KindLR {
		w, b := n.mlp.LayerParams(params[:m], 0)
		for i := range w {
			w[i] = 1
		}
		clear(b)
	}
	if n.cross != nil {
		n.cross.Init(params[m:], seed+1)
	}
	if n.seq != nil {
		n.seq.init(params[m:], seed)
	}
}

// Describe names the network's dense blocks, for the progress lines.
func (n *Net) Describe() string {
	hidden := n.mlp.Sizes[1 : len(n.mlp.Sizes)-1]
	if n.seq != nil {
		return n.seq.describe(hidden)
	}
	switch n.kind {
	case config.KindFM:
		return fmt.Sprintf("fm (linear + pairwise interactions of dim %d%s)", n.fmDim, n.wideText())
	case config.KindDeepFM:
		return fmt.Sprintf("deepfm (MLP %v + pairwise interactions of dim %d%s)", hidden, n.fmDim, n.wideText())
	case config.KindDCNv2:
		return fmt.Sprintf("dcnv2 (%d cross layers of width %d, then MLP %v)", n.cross.Layers, n.cross.Width, hidden)
	case config.KindLR:
		return "lr (one linear layer)"
	case config.KindWDL:
		return fmt.Sprintf("wdl (MLP %v + the wide part)", hidden)
	}
	return fmt.Sprintf("MLP %v", hidden)
}

// NetWorkspace holds one goroutine's buffers for the passes of a Net.
type NetWorkspace struct {
	mlp   *densenet.Workspace
	fm    *densenet.FMWorkspace
	cross *densenet.CrossWorkspace
	// dcnv2: the batch expanded to rows, Cross's output, their gradients;
	// fm: the FM terms.
	flat, crossed, dflat, dcrossed, terms []float32
	// wide: the wide part's buffers (nil without it).
	wide *wideWorkspace
	// seq: the history part's (din, dien; nil for the other kinds).
	seq *seqWorkspace
}

// NewWorkspace returns buffers for batches of up to maxBatch samples;
// threads caps the goroutines of a matrix product (0: GOMAXPROCS).
func (n *Net) NewWorkspace(maxBatch, threads int) *NetWorkspace {
	ws := &NetWorkspace{mlp: n.mlp.NewWorkspace(maxBatch)}
	ws.mlp.Threads = threads
	if n.fmDim > 0 {
		ws.fm, ws.terms = densenet.NewFMWorkspace(n.fmDim, maxBatch), make([]float32, maxBatch)
	}
	if n.wide {
		ws.wide = n.newWideWorkspace(maxBatch)
	}
	if n.seq != nil {
		ws.seq = n.seq.newWorkspace(n.Layout.Levels(), threads)
	}
	if n.cross != nil {
		ws.cross = n.cross.NewWorkspace(maxBatch)
		ws.cross.Threads = threads
		size := maxBatch * n.inWidth()
		ws.flat, ws.crossed, ws.dflat, ws.dcrossed = make([]float32, size), make([]float32, size), make([]float32, size), make([]float32, size)
	}
	return ws
}

// ForwardTree sets logits (Count[0] values) to the logits of the samples
// of the compressed batch t.
func (n *Net) ForwardTree(ws *NetWorkspace, params []float32, t densenet.Tree, logits []float32) {
	if !n.wide {
		n.forwardDeep(ws, params, t, logits)
		return
	}
	n.forwardDeep(ws, params, n.splitTree(ws.wide, t), logits)
	n.addWide(ws.wide, t, logits)
}

// forwardDeep is ForwardTree without the wide part.
func (n *Net) forwardDeep(ws *NetWorkspace, params []float32, t densenet.Tree, logits []float32) {
	m, b := n.mlp.NumParams(), t.Count[0]
	if n.seq != nil {
		n.mlp.ForwardTree(ws.mlp, params[:m], n.seq.forward(ws.seq, params[m:], t), logits)
		return
	}
	if n.cross != nil {
		size := b * n.inWidth()
		flat, crossed := ws.flat[:size], ws.crossed[:size]
		densenet.ExpandTree(flat, t)
		n.cross.Forward(ws.cross, params[m:], flat, b, crossed)
		n.mlp.Forward(ws.mlp, params[:m], crossed, b, logits)
		return
	}
	n.mlp.ForwardTree(ws.mlp, params[:m], t, logits)
	if ws.fm != nil {
		terms := ws.terms[:b]
		ws.fm.ForwardTree(t, terms)
		densenet.Axpy(logits, 1, terms)
	}
}

// BackwardTree, after ForwardTree on ws with the same params and t, sets
// grad (NumParams values) to the gradient of the loss with respect to the
// dense parameters and dX[k] to that with respect to the level-k nodes'
// pooled rows, given dlogits, the gradient with respect to the logits.
func (n *Net) BackwardTree(ws *NetWorkspace, params []float32, t densenet.Tree, dlogits, grad []float32, dX [][]float32) {
	if !n.wide {
		n.backwardDeep(ws, params, t, dlogits, grad, dX)
		return
	}
	w := ws.wide
	n.backwardDeep(ws, params, w.deepTree(t), dlogits, grad, w.deepDX[:len(t.Count)])
	n.mergeWide(w, t, dlogits, dX)
}

// backwardDeep is BackwardTree without the wide part.
func (n *Net) backwardDeep(ws *NetWorkspace, params []float32, t densenet.Tree, dlogits, grad []float32, dX [][]float32) {
	m, b := n.mlp.NumParams(), t.Count[0]
	if n.seq != nil {
		n.mlp.BackwardTree(ws.mlp, params[:m], ws.seq.tree, dlogits, grad[:m], ws.seq.dx)
		n.seq.backward(ws.seq, params[m:], t, grad[m:], dX)
		return
	}
	if n.cross != nil {
		size := b * n.inWidth()
		dflat, dcrossed := ws.dflat[:size], ws.dcrossed[:size]
		n.mlp.Backward(ws.mlp, params[:m], ws.crossed[:size], b, dlogits, grad[:m], dcrossed)
		n.cross.Backward(ws.cross, params[m:], ws.flat[:size], b, dcrossed, grad[m:], dflat)
		densenet.ReduceTree(dX, t, dflat, 0)
		return
	}
	n.mlp.BackwardTree(ws.mlp, params[:m], t, dlogits, grad[:m], dX)
	if ws.fm != nil {
		ws.fm.BackwardTree(t, dlogits, dX, 1)
	}
}

// Infer holds the buffers of the forward passes of one goroutine.
type Infer struct {
	ws   *NetWorkspace
	xs   [][]float32
	tree densenet.Tree
}

// NewInfer returns buffers for batches of up to maxBatch samples.
func (n *Net) NewInfer(maxBatch int) *Infer {
	L := n.Layout.Levels()
	return &Infer{ws: n.NewWorkspace(maxBatch, 0), xs: make([][]float32, L),
		tree: densenet.Tree{Cols: n.Cols, Count: make([]int, L), X: make([][]float32, L)}}
}

// Forward pools batch b over rows (per table, the rows of b.Sparse.IDs in
// order) and writes the logit of each of its samples to logits (at least
// b.N long), with the dense parameters params.
func (n *Net) Forward(in *Infer, params []float32, b *compress.Batch, rows [][]float32, logits []float32) {
	n.Pool(&in.tree, in.xs, b, rows)
	n.ForwardTree(in.ws, params, in.tree, logits[:b.N])
}

// Pool pools batch b over rows (per table, the rows of b.Sparse.IDs in
// order) into xs, one buffer per level grown when short, and points tree
// (Count, X, Parent) at them: the tree ForwardTree takes. The trainer and
// Forward share it.
func (n *Net) Pool(tree *densenet.Tree, xs [][]float32, b *compress.Batch, rows [][]float32) {
	for k := range xs {
		lo, hi := n.Layout.LevelCols(k)
		xs[k] = grow(xs[k], b.Sparse.Nodes(k)*(hi-lo))
		tree.Count[k] = b.Sparse.Nodes(k)
		tree.X[k] = xs[k]
	}
	tree.Parent = b.Parent
	b.Sparse.PoolTree(rows, xs)
}
