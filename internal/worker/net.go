package worker

import (
	"fmt"

	"github.com/xdlgo/xps/compress"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/densenet"
	"github.com/xdlgo/xps/sparsenet"
)

// Net is the network of a model, as its config and input shape make it:
// the layout of the pooled input and the MLP. The trainer and a server
// (package serve) build it the same way, so that a server scores as the
// trainer's evaluation does.
type Net struct {
	Layout *sparsenet.Layout
	MLP    *densenet.MLP
	// Cols are the input columns by level, for densenet.Tree: level k's
	// are [Cols[k], Cols[k+1]).
	Cols []int
}

// NewNet builds the network of cfg (defaults filled) for inputs of shape.
func NewNet(cfg config.Config, shape Shape) (*Net, error) {
	layout, err := NewLayout(cfg, shape)
	if err != nil {
		return nil, err
	}
	sizes := append([]int{layout.Width()}, cfg.Model.Hidden...)
	mlp, err := densenet.NewMLP(append(sizes, 1))
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if n := mlp.NumParams(); n > maxDenseParams {
		return nil, fmt.Errorf("worker: the MLP %v would have %d parameters, more than %d", mlp.Sizes, n, maxDenseParams)
	}
	cols := make([]int, layout.Levels()+1)
	for k := 0; k < layout.Levels(); k++ {
		_, cols[k+1] = layout.LevelCols(k)
	}
	return &Net{Layout: layout, MLP: mlp, Cols: cols}, nil
}

// Infer holds the buffers of the forward passes of one goroutine.
type Infer struct {
	ws   *densenet.Workspace
	xs   [][]float32
	tree densenet.Tree
}

// NewInfer returns buffers for batches of up to maxBatch samples.
func (n *Net) NewInfer(maxBatch int) *Infer {
	L := n.Layout.Levels()
	return &Infer{ws: n.MLP.NewWorkspace(maxBatch), xs: make([][]float32, L),
		tree: densenet.Tree{Cols: n.Cols, Count: make([]int, L), X: make([][]float32, L)}}
}

// Forward pools batch b over rows (per table, the rows of b.Sparse.IDs in
// order) and writes the logit of each of its samples to logits (at least
// b.N long), with the MLP's parameters params.
func (n *Net) Forward(in *Infer, params []float32, b *compress.Batch, rows [][]float32, logits []float32) {
	for k := range in.xs {
		lo, hi := n.Layout.LevelCols(k)
		in.xs[k] = grow(in.xs[k], b.Sparse.Nodes(k)*(hi-lo))
		in.tree.Count[k] = b.Sparse.Nodes(k)
		in.tree.X[k] = in.xs[k]
	}
	in.tree.Parent = b.Parent
	b.Sparse.PoolTree(rows, in.xs)
	n.MLP.ForwardTree(in.ws, params, in.tree, logits[:b.N])
}
