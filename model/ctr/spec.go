package ctr

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/sparsenet"
)

// Spec describes a Net for a reader outside Go (the export dump, and from
// it the Python package's torch module) that rebuilds the network from
// its parts: a sample's input row x is, for each field (FieldSpec) in
// column order, its bag of features pooled (Pooling: sum of value·row,
// mean divides by the bag's size) from its table's rows (a mirror field
// pools its source field's features from the dim-1 wide table); the
// columns of the wide part (Wide: every mirror field's) are summed into
// the logit, the others, in order, are the deep input d; then
//
//	mlp, lr, wdl:  logit = MLP(d) (+ wide)
//	fm, deepfm:    logit = MLP(d) + FM(d over FMDim-wide fields) (+ wide)
//	dcnv2:         logit = MLP(Cross(d))
//
// with MLP's layers Linear (out x in weights, row-major) and ReLU but
// after the last, Cross's x_{l+1} = x_0 ⊙ (W_l·x_l + b_l) + x_l. Params
// place each weight and bias in the dense vector DenseName.
type Spec struct {
	Kind    string      `json:"kind"`
	Pooling string      `json:"pooling"`
	Fields  []FieldSpec `json:"fields"`
	// Width is the input row's, DeepWidth the deep input's.
	Width     int  `json:"width"`
	DeepWidth int  `json:"deep_width"`
	Wide      bool `json:"wide"`
	// MLP is the MLP's sizes, DeepWidth first and 1 last; CrossLayers
	// dcnv2's cross layers (0 otherwise); FMDim the FM term's embedding
	// dim (0: no FM term).
	MLP         []int       `json:"mlp"`
	CrossLayers int         `json:"cross_layers"`
	FMDim       int         `json:"fm_dim"`
	Params      []ParamSpec `json:"params"`
	// Sequence says the model has a behaviour history (din, dien), Seq
	// describes it.
	Sequence bool     `json:"sequence"`
	Seq      *SeqSpec `json:"seq,omitempty"`
}

// SeqSpec describes the behaviour-history part of din and dien (see
// seqNet): per sample, with n = min(the history's length, MaxLen) read
// from the length column LenCol of the input row,
//
//	e_t  = the History fields' position t, concatenated (Width wide; field
//	       f's position t is its columns [Col+t·dim, Col+(t+1)·dim))
//	q    = the Target fields' columns, concatenated
//	din:  v = Σ_{t<n} LAU(e_t, q)·e_t
//	dien: h = GRU(e_0..e_{n-1}); a = softmax_{t<n} LAU(h_t, q);
//	      v = AUGRU(h; a) at step n-1 (0 when n = 0); sum = Σ_{t<n} e_t
//
// LAU (params att.L.weight, .bias, .prelu: densenet.Attention) scores
// [k, q, k−q, k⊙q] through Attention's hidden layers with PReLU and a
// final linear layer; GRU and AUGRU (gru.*, augru.*: densenet.GRU) are
// PyTorch's nn.GRU cell, AUGRU's update h_{t-1} + a_t·(1−z)⊙(n−h_{t-1}).
// The MLP's input is Inputs' segments in order. Namespace[f] is the field
// whose namespace field f's tokens hash in (a history field's is its
// target's).
type SeqSpec struct {
	Kind      string       `json:"kind"`
	MaxLen    int          `json:"max_len"`
	Width     int          `json:"width"`
	LenCol    int          `json:"len_col"`
	History   []SeqField   `json:"history"`
	Target    []SeqField   `json:"target"`
	Attention []int        `json:"attention"`
	Namespace []uint32     `json:"namespace"`
	Inputs    []InputRange `json:"inputs"`
}

// SeqField is a history or target field: its number, its first column
// in the input row, its dim.
type SeqField struct {
	Field int `json:"field"`
	Col   int `json:"col"`
	Dim   int `json:"dim"`
}

// InputRange is a segment of the MLP's input: the input row's columns
// [Lo, Hi) (Of "x"), v (Of "v") or dien's history sum (Of "sum").
type InputRange struct {
	Of string `json:"of"`
	Lo int    `json:"lo"`
	Hi int    `json:"hi"`
}

// FieldSpec is one field of a Spec: its number (a mirror field's is past
// the data's fields), its table (by name; "" for a dense field), level,
// columns [Col, Col+Width) of the input row, and for a mirror field the
// field it mirrors (-1 otherwise).
type FieldSpec struct {
	Field      int    `json:"field"`
	Table      string `json:"table"`
	Level      int    `json:"level"`
	Col        int    `json:"col"`
	Width      int    `json:"width"`
	DenseWidth int    `json:"dense_width,omitempty"`
	SeqLen     int    `json:"seq_len,omitempty"`
	MirrorOf   int    `json:"mirror_of"`
}

// ParamSpec places a tensor in the dense vector: Shape's values from
// Offset, row-major.
type ParamSpec struct {
	Name   string `json:"name"`
	Offset int    `json:"offset"`
	Shape  []int  `json:"shape"`
}

// Spec returns n's description; cfg is the config n was built from.
func (n *Net) Spec(cfg config.Config) Spec {
	l := n.Layout
	s := Spec{Kind: n.kind, Pooling: "sum", Width: l.Width(), DeepWidth: n.inWidth(), Wide: n.wide,
		MLP: n.mlp.Sizes, FMDim: n.fmDim, Sequence: n.seq != nil}
	if cfg.Model.Pooling == "mean" {
		s.Pooling = "mean"
	}
	for f := range l.Fields() {
		fs := FieldSpec{Field: f, Level: l.Level(f), MirrorOf: l.MirrorOf(f), DenseWidth: l.DenseWidth(f), SeqLen: l.SeqLen(f)}
		fs.Col, fs.Width = l.Cols(f) // within the level's block
		fs.Width -= fs.Col
		lo, _ := l.LevelCols(fs.Level)
		fs.Col += lo
		if t := l.Table(f); t >= 0 {
			fs.Table = cfg.Model.Tables[t].Name
		}
		s.Fields = append(s.Fields, fs)
	}
	m := n.mlp.NumParams()
	params := make([]float32, n.NumParams())
	for i := 0; i < len(n.mlp.Sizes)-1; i++ {
		w, b := n.mlp.LayerParams(params[:m], i)
		s.Params = append(s.Params, ParamSpec{Name: "mlp." + strconv.Itoa(i) + ".weight", Offset: offsetIn(params, w), Shape: []int{n.mlp.Sizes[i+1], n.mlp.Sizes[i]}},
			ParamSpec{Name: "mlp." + strconv.Itoa(i) + ".bias", Offset: offsetIn(params, b), Shape: []int{n.mlp.Sizes[i+1]}})
	}
	if n.seq != nil {
		s.Seq = n.seq.spec(cfg, l, params, params[m:], &s.Params)
	}
	if n.cross != nil {
		s.CrossLayers = n.cross.Layers
		for i := range n.cross.Layers {
			w, b := n.cross.LayerParams(params[m:], i)
			s.Params = append(s.Params, ParamSpec{Name: "cross." + strconv.Itoa(i) + ".weight", Offset: offsetIn(params, w), Shape: []int{n.cross.Width, n.cross.Width}},
				ParamSpec{Name: "cross." + strconv.Itoa(i) + ".bias", Offset: offsetIn(params, b), Shape: []int{n.cross.Width}})
		}
	}
	return s
}

// spec describes the history part on layout l; p is its share of the
// dense vector all (for the offsets of its params, appended to params).
func (sn *seqNet) spec(cfg config.Config, l *sparsenet.Layout, all, p []float32, params *[]ParamSpec) *SeqSpec {
	s := &SeqSpec{Kind: "din", MaxLen: sn.L, Width: sn.D, Attention: slices.Clone(sn.att.Hidden),
		Namespace: cfg.Model.Sequence.Namespace(l.Fields())}
	if sn.dien {
		s.Kind = "dien"
	}
	abs := func(f seqField) int { lo, _ := l.LevelCols(f.level); return lo + f.col }
	for i, f := range sn.hist {
		s.History = append(s.History, SeqField{Field: cfg.Model.Sequence.History[i], Col: abs(f), Dim: f.dim})
	}
	for i, f := range sn.tgt {
		s.Target = append(s.Target, SeqField{Field: cfg.Model.Sequence.Target[i], Col: abs(f), Dim: f.dim})
	}
	lo, _ := l.LevelCols(sn.level)
	s.LenCol = lo + sn.lenCol
	for k := range l.Levels() {
		if sn.pre(k) > 0 {
			s.Inputs = append(s.Inputs, InputRange{Of: "v"})
		}
		lo, hi := l.LevelCols(k)
		for c := lo; c < hi; c++ {
			switch last := len(s.Inputs) - 1; {
			case sn.skip[c]:
			case last >= 0 && s.Inputs[last].Of == "x" && s.Inputs[last].Hi == c:
				s.Inputs[last].Hi++
			default:
				s.Inputs = append(s.Inputs, InputRange{Of: "x", Lo: c, Hi: c + 1})
			}
		}
		if sn.post(k) > 0 {
			s.Inputs = append(s.Inputs, InputRange{Of: "sum"})
		}
	}
	att, gru, aug := sn.split(p)
	add := func(name string, v []float32, shape ...int) {
		*params = append(*params, ParamSpec{Name: name, Offset: offsetIn(all, v), Shape: shape})
	}
	for i := range len(sn.att.Hidden) + 1 {
		w, b, alpha := sn.att.LayerParams(att, i)
		out := len(b)
		add("att."+strconv.Itoa(i)+".weight", w, out, len(w)/out)
		add("att."+strconv.Itoa(i)+".bias", b, out)
		if alpha != nil {
			add("att."+strconv.Itoa(i)+".prelu", alpha, out)
		}
	}
	if sn.dien {
		for i, g := range [][]float32{gru, aug} {
			name := []string{"gru", "augru"}[i]
			wih, whh, bih, bhh := sn.gru.Params(g)
			add(name+".weight_ih", wih, 3*sn.D, sn.D)
			add(name+".weight_hh", whh, 3*sn.D, sn.D)
			add(name+".bias_ih", bih, 3*sn.D)
			add(name+".bias_hh", bhh, 3*sn.D)
		}
	}
	return s
}

// offsetIn is the index in v of sub's first value (sub a subslice of v).
func offsetIn(v, sub []float32) int {
	return int((uintptr(unsafe.Pointer(unsafe.SliceData(sub))) - uintptr(unsafe.Pointer(unsafe.SliceData(v)))) / 4)
}

// NetOf builds the network a model's stored config and shape describe
// (an export's manifest, a snapshot: config.Config and Shape as JSON), the
// config's defaults filled, as the trainer built it.
func NetOf(cfgJSON, shapeJSON []byte) (config.Config, *Net, error) {
	var cfg config.Config
	if err := json.Unmarshal(cfgJSON, &cfg); err != nil {
		return cfg, nil, fmt.Errorf("the config: %w", err)
	}
	cfg.EnsureDefaults()
	var shape Shape
	if err := json.Unmarshal(shapeJSON, &shape); err != nil || shape.Fields < 1 {
		if err == nil {
			err = errors.New("no fields")
		}
		return cfg, nil, fmt.Errorf("no input shape (%v): the model was written by an older trainer", err)
	}
	net, err := NewNet(cfg, shape)
	return cfg, net, err
}
