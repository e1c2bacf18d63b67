package autotune

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/config"
)

// A Setting is one point of the search: a model kind and its shape, and
// learning rates as multiples of the kind's defaults. Setting 0 of every
// search is the job's own configuration (all zero: nothing changed).
type Setting struct {
	// Kind is the model kind ("": the job's).
	Kind string `json:"kind,omitempty"`
	// Dim is the embedding tables' dim (0: the kind's default; the wide
	// part's table keeps dim 1).
	Dim int `json:"dim,omitempty"`
	// Hidden are the hidden layers (nil: the kind's default).
	Hidden []int `json:"hidden,omitempty"`
	// LR and DenseLR multiply the sparse tables' and the dense network's
	// learning rates (0: 1, the defaults).
	LR      float64 `json:"lr_scale,omitempty"`
	DenseLR float64 `json:"dense_lr_scale,omitempty"`
}

// The space the settings are drawn from.
var (
	dims      = []int{8, 16, 32}
	hiddens   = [][]int{{200, 80}, {400, 400}, {256, 128}, {100, 50}, {400, 200, 100}}
	lrRange   = [2]float64{0.25, 4} // log-uniform multiples of the default
	noHidden  = []string{config.KindLR, config.KindFM}
	fixedDims = []string{config.KindLR} // dim 1
)

// Draw returns n settings: the job's own first, then each other kind of
// kinds at its own defaults, then settings drawn from the space with
// seed, the kind among kinds (none: the job's, kind).
func Draw(n int, kinds []string, kind string, seed uint64) []Setting {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := []Setting{{}}
	for _, k := range kinds {
		if k != kind && len(out) < n {
			out = append(out, Setting{Kind: k})
		}
	}
	for len(out) < n {
		var s Setting
		k := kind
		if len(kinds) > 0 {
			s.Kind = kinds[rng.IntN(len(kinds))]
			k = s.Kind
		}
		if !slices.Contains(fixedDims, k) {
			s.Dim = dims[rng.IntN(len(dims))]
		}
		if !slices.Contains(noHidden, k) {
			s.Hidden = hiddens[rng.IntN(len(hiddens))]
		}
		lo, hi := math.Log(lrRange[0]), math.Log(lrRange[1])
		s.LR = math.Exp(lo + rng.Float64()*(hi-lo))
		s.DenseLR = math.Exp(lo + rng.Float64()*(hi-lo))
		out = append(out, s)
	}
	return out
}

// String is how the trial table shows s.
func (s Setting) String() string {
	if s.Kind == "" && s.Dim == 0 && s.Hidden == nil && s.LR == 0 && s.DenseLR == 0 {
		return "the job's own settings"
	}
	var parts []string
	if s.Kind != "" {
		parts = append(parts, "kind "+s.Kind)
	}
	if s.Dim > 0 {
		parts = append(parts, fmt.Sprintf("dim %d", s.Dim))
	}
	if s.Hidden != nil {
		parts = append(parts, "hidden "+joinInts(s.Hidden))
	}
	if s.LR > 0 {
		parts = append(parts, fmt.Sprintf("lr x%.3g", s.LR))
	}
	if s.DenseLR > 0 {
		parts = append(parts, fmt.Sprintf("dense lr x%.3g", s.DenseLR))
	}
	return strings.Join(parts, ", ")
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// Config builds the job's configuration with s: sources (the job's own:
// its file, its command line) and s's changes after them, as -set would
// make them, so that a changed kind brings its own defaults. The learning
// rates are the kind's defaults (or the sources' rates) times s's
// multiples. The result has train.autotune off: it is a job to run as it
// is; it keeps holdout, the job.holdout the search validates on (set by
// default for autotuning, which the result no longer does).
func (s Setting) Config(sources []config.Source, holdout int) (config.Config, error) {
	var shape config.Overrides
	shape.Add("autotune", "train.autotune", "false")
	if holdout > 0 {
		shape.Add("autotune", "job.holdout", strconv.Itoa(holdout))
	}
	if s.Kind != "" {
		shape.Add("autotune", "model.kind", s.Kind)
	}
	if s.Dim > 0 {
		shape.Add("autotune", "model.tables[*].dim", strconv.Itoa(s.Dim))
	}
	if s.Hidden != nil {
		shape.Add("autotune", "model.hidden", joinInts(s.Hidden))
	}
	c, err := config.Build(append(slices.Clip(sources), &shape)...)
	if err != nil || s.LR == 0 && s.DenseLR == 0 {
		return c, err
	}
	var rates config.Overrides
	if s.LR > 0 {
		rates.Add("autotune", "model.tables[*].optimizer.lr", strconv.FormatFloat(float64(c.Model.Tables[0].Optimizer.LR)*s.LR, 'g', 4, 64))
	}
	if s.DenseLR > 0 {
		rates.Add("autotune", "model.dense_optimizer.lr", strconv.FormatFloat(float64(c.Model.DenseOptimizer.LR)*s.DenseLR, 'g', 4, 64))
	}
	return config.Build(append(slices.Clip(sources), &shape, &rates)...)
}
