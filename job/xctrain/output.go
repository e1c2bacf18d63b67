package xctrain

import (
	"context"
	"io"
	"math"

	"github.com/xdlgo/xps/sparsenet/slide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
)

// output is the SLIDE output layer as the trainer drives it: one
// slide.Layer (model.output.owners 1), a dslide.Layer of that many owners
// in this process, or, with several workers, this worker's share with the
// other workers' reached over gRPC (shared, peers.go).
type output interface {
	// TrainBatch trains one step; pause is the pause request this worker
	// was asked to serve (0: none), pauseAll the one every worker of the
	// step serves after it (with several workers: the latest any was
	// asked to serve).
	TrainBatch(ctx context.Context, x []float32, n int, labels [][]int32, dx []float32, pause uint64) (loss float64, pauseAll uint64, err error)
	// Maintain runs the tables' upkeep after a step.
	Maintain()
	Rehash(ctx context.Context) error
	// TuneInference calibrates sparse inference on the hidden vectors x
	// (n of them) of samples with these labels; ok is false where it
	// cannot run here (the shares of other workers).
	TuneInference(ctx context.Context, x []float32, n int, labels [][]int32, o slide.InferTuneOptions) (res slide.InferTune, ok bool, err error)
	Predict(ctx context.Context, x []float32, n, k int, sparse bool, out []int32) error
	// Candidates is nil when the candidates cannot be listed here (the
	// shares of other workers).
	Candidates(v []float32, dst []int32) []int32
	Save(w io.Writer) error
	Load(r io.Reader) error
	HasTables() bool
	// ParamBytes and TablesBytes count the layer in this process.
	ParamBytes() int64
	TablesBytes() int64
	Close() error
}

// inProcess are the layers whose every row is in this process.
type inProcess interface {
	TrainBatch(x []float32, n int, labels [][]int32, dx []float32) (float64, error)
	PredictSparse(x []float32, n, k int, out []int32)
	PredictDense(x []float32, n, k int, out []int32)
	Rehash()
	TuneInference(x []float32, n int, labels [][]int32, o slide.InferTuneOptions) (slide.InferTune, error)
	Candidates(v []float32, dst []int32) []int32
	Save(w io.Writer) error
	Load(r io.Reader) error
	ParamBytes() int64
	TablesBytes() int64
	Close() error
}

// local is an in-process layer as an output.
type local struct {
	inProcess
	maintain  func()
	hasTables bool
}

func (l local) TrainBatch(_ context.Context, x []float32, n int, labels [][]int32, dx []float32, pause uint64) (float64, uint64, error) {
	loss, err := l.inProcess.TrainBatch(x, n, labels, dx)
	return loss, pause, err
}

func (l local) Maintain()       { l.maintain() }
func (l local) HasTables() bool { return l.hasTables }

func (l local) Rehash(context.Context) error {
	l.inProcess.Rehash()
	return nil
}

func (l local) TuneInference(_ context.Context, x []float32, n int, labels [][]int32, o slide.InferTuneOptions) (slide.InferTune, bool, error) {
	res, err := l.inProcess.TuneInference(x, n, labels, o)
	return res, err == nil, err
}

func (l local) Predict(_ context.Context, x []float32, n, k int, sparse bool, out []int32) error {
	if sparse {
		l.PredictSparse(x, n, k, out)
	} else {
		l.PredictDense(x, n, k, out)
	}
	return nil
}

// sharded is the output of more than one owner.
type sharded interface {
	Stats() dslide.Stats
	Partition() dslide.Partition
}

// newOutput builds the layer of sc split between owners in this process.
func newOutput(sc slide.Config, owners int) (output, slide.Params, error) {
	if owners > 1 {
		l, err := dslide.New(sc, owners)
		if err != nil {
			return nil, slide.Params{}, err
		}
		return sharedStats{local{inProcess: l, maintain: l.Maintain, hasTables: l.HasTables()}, l}, l.Owner(0).Params(), nil
	}
	l, err := slide.New(sc)
	if err != nil {
		return nil, slide.Params{}, err
	}
	return local{inProcess: l, maintain: func() { l.Maintain() }, hasTables: l.Tables() != nil}, l.Params(), nil
}

// sharedStats is an in-process dslide.Layer: an output with its balance.
type sharedStats struct {
	local
	sh sharded
}

func (s sharedStats) Stats() dslide.Stats         { return s.sh.Stats() }
func (s sharedStats) Partition() dslide.Partition { return s.sh.Partition() }

// describeOwners fills the owners' figures into res: their balance so far
// and the bytes of a batch of train.batch_size samples (with several
// workers, this worker's part of it) with the training set's mean labels
// per sample, as D-SLIDE and as dense model parallelism, seen from this
// worker's share (owner 0 in one process).
func (t *Trainer) describeOwners(res *Result) {
	res.Owners = t.cfg.Model.Output.Owners
	sh, ok := t.out.(sharded)
	if !ok {
		return
	}
	res.Owners = sh.Partition().Owners()
	st := sh.Stats()
	res.OwnerImbalance, res.OwnerImbalanceMean = st.MaxImbalance, st.MeanImbalance
	d := t.opts.Train
	n, own := t.cfg.Train.BatchSize, 0
	if p := t.opts.Peers; p != nil { // this worker's part of the round's batch
		n, own = (n+p.Workers-1)/p.Workers, p.Index
	}
	labels := int(math.Round(float64(len(d.Labels)) / float64(max(d.Len(), 1)) * float64(n)))
	res.StepBytes = dslide.StepBytes(sh.Partition(), own, n, t.net.OutputWidth(), labels)
	res.DenseStepBytes = dslide.DenseStepBytes(sh.Partition(), own, n, t.net.OutputWidth(), labels)
}
