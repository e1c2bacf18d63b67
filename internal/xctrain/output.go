package xctrain

import (
	"io"
	"math"

	"github.com/xdlgo/xps/sparsenet/slide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
)

// output is the SLIDE output layer as the trainer drives it: one
// slide.Layer (model.output.owners 1) or a dslide.Layer of that many
// owners in this process.
type output interface {
	TrainBatch(x []float32, n int, labels [][]int32, dx []float32) (float64, error)
	Maintain()
	Rehash()
	PredictSparse(x []float32, n, k int, out []int32)
	PredictDense(x []float32, n, k int, out []int32)
	Candidates(v []float32, dst []int32) []int32
	Save(w io.Writer) error
	Load(r io.Reader) error
	HasTables() bool
	ParamBytes() int64
	TablesBytes() int64
	Close() error
}

// sharded is the output of more than one owner.
type sharded interface {
	Stats() dslide.Stats
	Partition() dslide.Partition
}

// newOutput builds the layer of sc split between owners.
func newOutput(sc slide.Config, owners int) (output, slide.Params, error) {
	if owners > 1 {
		l, err := dslide.New(sc, owners)
		if err != nil {
			return nil, slide.Params{}, err
		}
		return l, l.Owner(0).Params(), nil
	}
	l, err := slide.New(sc)
	if err != nil {
		return nil, slide.Params{}, err
	}
	return single{l}, l.Params(), nil
}

// single is one slide.Layer as an output.
type single struct{ *slide.Layer }

func (s single) Maintain()       { s.Layer.Maintain() }
func (s single) HasTables() bool { return s.Tables() != nil }

// describeOwners fills the owners' figures into res: their balance so far
// and the bytes of a batch of train.batch_size samples with the training
// set's mean labels per sample, as D-SLIDE and as dense model
// parallelism, seen from owner 0.
func (t *Trainer) describeOwners(res *Result) {
	res.Owners = t.cfg.Model.Output.Owners
	sh, ok := t.out.(sharded)
	if !ok {
		return
	}
	st := sh.Stats()
	res.OwnerImbalance, res.OwnerImbalanceMean = st.MaxImbalance, st.MeanImbalance
	d := t.opts.Train
	n := t.cfg.Train.BatchSize
	labels := int(math.Round(float64(len(d.Labels)) / float64(max(d.Len(), 1)) * float64(n)))
	res.StepBytes = dslide.StepBytes(sh.Partition(), 0, n, t.net.OutputWidth(), labels)
	res.DenseStepBytes = dslide.DenseStepBytes(sh.Partition(), 0, n, t.net.OutputWidth(), labels)
}
