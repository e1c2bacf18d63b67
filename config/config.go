package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/snapshot"
	"github.com/xdlgo/xps/sparsenet/slide"
)

// MaxLevels bounds the levels of model.field_levels (as the sample-group
// format does).
const MaxLevels = 8

// DefaultHoldout is job.holdout for a job that autotunes on training
// files without a validation set: a tenth of the data held out.
const DefaultHoldout = 10

// ErrInvalid is wrapped by every validation problem.
var ErrInvalid = errors.New("config: invalid")

// Config is a whole job.
type Config struct {
	Job   JobConfig   `yaml:"job"`
	Model ModelConfig `yaml:"model"`
	Train TrainConfig `yaml:"train"`
	Data  DataConfig  `yaml:"data"`
	Kafka KafkaConfig `yaml:"kafka"`
	// Snapshot is the scheduler's snapshot policy (package snapshot), read
	// by the scheduler and by the embedded cluster of worker -local.
	Snapshot snapshot.Policy `yaml:"snapshot"`
	// Export is the scheduler's model export policy (package export):
	// where exports for serving go, how often, and how rows are encoded.
	Export export.Policy `yaml:"export"`
	// Autotune is the search train.autotune runs (package autotune).
	Autotune AutotuneConfig `yaml:"autotune"`

	// built is set by Build (see Built).
	built bool
}

// JobConfig is what every process of a job reads: the data and how many
// workers share it. The scheduler divides Train among Workers workers;
// each worker reads its share and evaluates on Test.
type JobConfig struct {
	// ID names the job. Every snapshot records it, and a scheduler
	// restores only snapshots of its own job: a snapshot store holding
	// another job's snapshots is refused, so that a new job never resumes
	// an old one's model by accident. Give the id of the job whose
	// snapshots a store holds to resume it where its cluster's etcd is
	// gone (a new embedded cluster, a new etcd); a scheduler that takes
	// over a running cluster finds the id in etcd.
	//
	// The default value is empty: the scheduler of a new cluster picks an
	// id ("job-" and the time and a random suffix) and records it in etcd.
	ID string `yaml:"id"`
	// Train lists the training data: files, directories or globs, local or
	// all on one HDFS namenode (hdfs://HOST:PORT/PATH).
	//
	// The default value is empty: the built-in generated dataset (data).
	Train []string `yaml:"train"`
	// Test lists the test data, read into memory by every worker.
	//
	// The default value is empty: no test set (for file data).
	Test []string `yaml:"test"`
	// Valid lists the validation data (the test set's format), read into
	// memory by the first worker, which scores it wherever it evaluates
	// (after every epoch, and every train.eval_every batches) by
	// train.valid_metric. The best model met is kept: with a snapshot
	// store (worker -local has one) it is snapshotted, pinned, and the job
	// ends on it, the final test evaluation and export included, however
	// the later validations went; train.patience stops the job early.
	//
	// The default value is empty: no validation set (for the generated
	// data: data.valid_samples).
	Valid []string `yaml:"valid"`
	// Holdout holds out about 1 in every Holdout sample groups of the
	// training files as the validation set, chosen by a hash of each
	// group's position (reader.HeldOut): the same groups in every epoch,
	// whatever the workers' splits or the shuffle, never trained on. The
	// first worker reads them from every training file into memory at the
	// start (one pass over the data). Not with job.valid, Kafka or the
	// generated data (data.valid_samples).
	//
	// The default value is 0 (nothing held out), or 10 for a job with
	// train.autotune on training files and no job.valid: the search needs
	// a validation set, and the job it chooses keeps it.
	Holdout int `yaml:"holdout"`
	// TestScores names a file into which the first worker writes, after
	// the last evaluation, each test sample's predicted probability, one
	// per line in the test set's order (compare with what a server
	// scores, say).
	//
	// The default value is empty: none.
	TestScores string `yaml:"test_scores"`
	// WarmStart names a model export store (a directory or
	// hdfs://HOST:PORT/PATH): a new model (no checkpoint in the cluster)
	// starts from the newest export there, its rows and dense values; the
	// optimizers' state starts afresh. The model's tables and network must
	// match the export's. A model resumed from a snapshot ignores it.
	//
	// The default value is empty: a new model starts from its
	// initializers.
	WarmStart string `yaml:"warm_start"`
	// Workers is the number of workers sharing the training data.
	//
	// The default value is 1.
	Workers int `yaml:"workers" zero:"refused"`
	// SplitBytes is the smallest byte range worth cutting a training file
	// into: the scheduler cuts a file larger than a worker's share (every
	// file, when there are fewer files than workers) into at most workers
	// ranges of at least this size or a workers-th of the file, then cuts
	// the largest pieces once more while there are fewer pieces than
	// workers, so every worker gets a share whenever the data allows
	// (never for xml, whose files start with a header: see reader.Assign).
	//
	// The default value is 64 MiB.
	SplitBytes int64 `yaml:"split_bytes" zero:"refused"`
}

// KafkaConfig makes a job train from a Kafka topic instead of files (see
// package reader/kafkasrc). Messages are in train.format, one sample group
// each. Positions live in the model: after the batches' pushes are applied
// the worker stores each partition's position on the AMS shards, and a
// reader (re)opening a partition starts from there, so a job run again
// over the same model resumes where it stopped. train.shuffle does not
// apply: a topic is read in order, once (train.epochs must be 1).
type KafkaConfig struct {
	// Brokers are the bootstrap brokers. Setting them turns Kafka on.
	//
	// The default value is empty (train from files or generated data).
	Brokers []string `yaml:"brokers"`
	// Topic is the topic to train from. Required with brokers.
	Topic string `yaml:"topic"`
	// Streaming trains forever on new messages (progressive validation:
	// every batch is scored before it is trained on, and the running AUC
	// and logloss are reported). With false the job reads each partition
	// up to the end offset it had when the reader opened, then ends.
	//
	// The default value is false.
	Streaming bool `yaml:"streaming"`
	// CommitEvery is how often the positions of the applied batches are
	// stored in the model (and at the end and at every reassignment).
	//
	// The default value is 1s.
	CommitEvery time.Duration `yaml:"commit_every" zero:"refused"`
	// MaxWait is how long one fetch waits for new messages.
	//
	// The default value is 200ms.
	MaxWait time.Duration `yaml:"max_wait" zero:"refused"`
}

// Enabled reports whether the job trains from Kafka.
func (k *KafkaConfig) Enabled() bool { return len(k.Brokers) > 0 }

// The kinds of model (ModelConfig.Kind).
const (
	KindMLP    = "mlp"
	KindLR     = "lr"
	KindFM     = "fm"
	KindDeepFM = "deepfm"
	KindDCNv2  = "dcnv2"
	KindWDL    = "wdl"
	KindDIN    = "din"
	KindDIEN   = "dien"
)

// SequenceConfig declares a user's behaviour history (DIN and DIEN,
// package model/ctr's Net): sequence fields whose features are an ordered
// list of items, oldest first, aligned position by position (the item
// ids, their categories, ...), and the candidate's fields of the same
// vocabularies.
type SequenceConfig struct {
	// History lists the history's sequence fields. The history vector at
	// a position is their embeddings there, concatenated. With kind din
	// or dien each is a sequence field of MaxLen positions
	// (sparsenet.FieldSpec.SeqLen); with the other kinds a bag, sum- or
	// mean-pooled like any field (the baseline of the sequence models).
	//
	// The default value is empty: no history.
	History []int `yaml:"history"`
	// Target lists, for each history field, the candidate's field of the
	// same vocabulary: the history field's tokens are hashed in the
	// target's namespace (reader.DecoderOptions.Namespace), so the same
	// item is one row of one table in both. The query vector of the
	// attention is the target fields' embeddings, concatenated.
	//
	// The default value is empty (required with History).
	Target []int `yaml:"target"`
	// Negatives lists DIEN's negative history, aligned with History (for
	// each position, an item the user did not pick, and its category):
	// the auxiliary loss asks the interest extractor's state at step t to
	// score the item at t+1 above the negative one (Zhou et al. 2019,
	// eq. 4). Hashed in the targets' namespaces too.
	//
	// The default value is empty: no auxiliary loss.
	Negatives []int `yaml:"negatives"`
	// MaxLen is the number of positions kept: the last MaxLen items of a
	// longer history.
	//
	// The default value is 50.
	MaxLen int `yaml:"max_len" zero:"refused"`
	// Attention lists the hidden layers (PReLU) of the local activation
	// unit, the MLP that scores a history position against the candidate
	// from [e, q, e-q, e*q].
	//
	// The default value is [80, 40].
	Attention []int `yaml:"attention"`
	// AuxWeight weighs DIEN's auxiliary loss against the click loss.
	//
	// The default value is 1 with kind dien and negatives, else 0.
	AuxWeight *float64 `yaml:"aux_weight"`
}

// On reports whether the model has a behaviour history.
func (s *SequenceConfig) On() bool { return len(s.History) > 0 }

// Namespace returns the reader's namespace of every field below fields
// (reader.DecoderOptions.Namespace): the history and negative fields hash
// in their targets' namespaces. It is nil without a history.
func (s *SequenceConfig) Namespace(fields int) []uint32 {
	if !s.On() {
		return nil
	}
	n := fields
	for _, f := range slices.Concat(s.History, s.Target, s.Negatives) {
		n = max(n, f+1)
	}
	ns := make([]uint32, n)
	for f := range ns {
		ns[f] = uint32(f)
	}
	for i, t := range s.Target {
		if i < len(s.History) {
			ns[s.History[i]] = uint32(t)
		}
		if i < len(s.Negatives) {
			ns[s.Negatives[i]] = uint32(t)
		}
	}
	return ns
}

// WideTable is the name of the wide part's table (ModelConfig.Wide).
const WideTable = "wide"

// ModelConfig declares the model: sparse tables, fields, MLP.
type ModelConfig struct {
	// Kind is the network over the pooled field embeddings (package
	// model/ctr's Net): mlp (concatenate the fields, MLP); lr (logistic
	// regression: the fields' pooled rows through one linear layer; with
	// dim-1 rows, a weight per ID); fm (a factorization machine: the
	// linear layer plus the pairwise interactions of the fields'
	// embeddings, Rendle 2010); deepfm (the MLP plus those interactions,
	// Guo et al. 2017); dcnv2 (CrossLayers full-rank cross layers on the
	// concatenation, then the MLP, Wang et al. 2021); wdl (Wide & Deep,
	// Cheng et al. 2016: the MLP plus the wide part, see Wide); din and
	// dien (the candidate scored against the user's behaviour history by
	// attention, Zhou et al. 2018, and by GRU, attention and AUGRU, Zhou
	// et al. 2019; see Sequence).
	//
	// The default value is mlp. For lr and fm model.hidden defaults to
	// none, and for lr the default table has dim 1 and FTRL.
	Kind string `yaml:"kind"`
	// Wide adds the wide part: every sparse field's IDs are also looked
	// up in the dim-1 table "wide" (sparsenet.FieldSpec.From), and their
	// weights, times the features' values, are summed into the logit: the
	// first-order term w(.) of fm and deepfm, the wide part of wdl.
	// Without a table named wide in Tables one is added: dim 1, zeros,
	// the first table's optimizer.
	//
	// The default value is true for fm, deepfm and wdl, false for the
	// other kinds (lr is a wide model itself).
	Wide *bool `yaml:"wide"`
	// CrossLayers is the number of dcnv2's cross layers.
	//
	// The default value is 2 (with kind dcnv2; 0 otherwise).
	CrossLayers int `yaml:"cross_layers" zero:"refused"`
	// Tables are the sparse embedding tables held by the AMS shards.
	//
	// The default value is one table "emb" of dim 18 with Adagrad (lr 0.05)
	// and uniform(±0.01) initialisation.
	Tables []ams.TableSpec `yaml:"tables"`
	// Fields is the number of feature fields (the MLP input is their pooled
	// vectors concatenated).
	//
	// The default value is 0: 1 + the largest field seen in the data.
	Fields int `yaml:"fields"`
	// FieldTables names the table of each field.
	//
	// The default value is empty: every field uses Tables[0].
	FieldTables []string `yaml:"field_tables"`
	// FieldLevels gives the level of each field: 0 for per-sample fields,
	// 1 for fields shared by a run of consecutive samples (a user), 2 for
	// a level above that, and so on. Consecutive samples whose level-k
	// features are identical share one level-k node in a compressed batch
	// (see package compress), which pools them and computes their share of
	// the first MLP layer once.
	//
	// The default value is empty: sample-group data (train.format: group)
	// gives each field the level of the line it is first seen on; other
	// formats put every field at level 0.
	FieldLevels []int `yaml:"field_levels"`
	// Pooling combines a field's bag of rows: sum or mean.
	//
	// The default value is "sum".
	Pooling string `yaml:"pooling"`
	// Hidden lists the MLP hidden layer sizes (ReLU).
	//
	// The default value is [200, 80].
	Hidden []int `yaml:"hidden"`
	// DenseOptimizer updates the MLP parameters, on the AMS shards.
	//
	// The default value is Adam with lr 0.001.
	DenseOptimizer ams.OptimizerSpec `yaml:"dense_optimizer"`
	// DenseSchedule scales DenseOptimizer's learning rate by the dense
	// variable's step (the batches applied, by every worker): a linear
	// warm-up, then a linear, cosine or exponential decay
	// (ams.LRSchedule).
	//
	// The default value scales nothing.
	DenseSchedule ams.LRSchedule `yaml:"dense_schedule"`
	// Seed drives MLP initialisation and shuffling.
	//
	// The default value is 1.
	Seed uint64 `yaml:"seed" zero:"refused"`
	// Sequence declares a user's behaviour history and the candidate's
	// fields it is scored against: the input of kinds din and dien.
	Sequence SequenceConfig `yaml:"sequence"`
	// Output chooses the model's output: one sigmoid logit (a CTR model)
	// or a SLIDE softmax layer over many labels (extreme multi-label
	// classification).
	Output OutputConfig `yaml:"output"`
}

// Output kinds.
const (
	// OutputLogit is one logit with sigmoid cross-entropy on binary labels:
	// the CTR model (package job/ctrtrain).
	OutputLogit = "logit"
	// OutputSLIDE is a softmax over output.labels labels trained through
	// a SLIDE layer (package sparsenet/slide) on XMLRepository data: the
	// embedding sum of a sample's features (model.tables[0], plus a bias,
	// ReLU) goes through output.hidden into the layer (package
	// job/xctrain). model.hidden, model.fields and field settings do
	// not apply.
	OutputSLIDE = "slide"
)

// OutputConfig configures the model's output. Every field but Kind applies
// to Kind "slide" only.
type OutputConfig struct {
	// Kind is "logit" or "slide" (see OutputLogit, OutputSLIDE). "slide"
	// needs train.format xml and no Kafka.
	//
	// The default value is "logit".
	Kind string `yaml:"kind"`
	// Labels is the number of output neurons.
	//
	// The default value is 0: the largest L of the data files' headers and
	// 1 + the largest label seen in the training and test data.
	Labels int `yaml:"labels"`
	// Hidden lists dense hidden layers (ReLU) between the embedding sum and
	// the SLIDE layer.
	//
	// The default value is empty: the embedding sum (with its bias and
	// ReLU) feeds the SLIDE layer, as in SLIDE's Amazon-670K network.
	Hidden []int `yaml:"hidden"`
	// Hash is the LSH family, slide.Config.Family by name: dwta
	// (densified winner-take-all) or simhash (signed random projections).
	//
	// The default value is the layer's default family (dwta).
	Hash string `yaml:"hash"`
	// Config is the SLIDE layer's own configuration (package
	// sparsenet/slide, its keys and defaults): sparsity, infer_sparsity,
	// k, l, r, tune, lr, insert_labels, no_center, threads, the rehash
	// schedule (rehash_base, rehash_growth, rehash_max, redraw_period,
	// slice_neurons) and the rest. The layer's Dim is Labels, its input
	// width the job's, its seed model.seed, its Family Hash.
	slide.Config `yaml:",inline"`
	// Eval says which inference the test evaluation runs: sparse (the LSH
	// candidates), dense (every label) or both.
	//
	// The default value is "both".
	Eval string `yaml:"eval"`
	// EvalLimit scores only the first N test samples.
	//
	// The default value is 0: every test sample.
	EvalLimit int `yaml:"eval_limit"`
	// ProgressiveEvery scores every N-th training batch (sparse
	// inference) before training on it, for the P@k of the progress
	// lines; 0 turns it off.
	//
	// The default value is 4.
	ProgressiveEvery *int `yaml:"progressive_every"`
	// Owners splits the SLIDE layer's labels into this many contiguous
	// shares (D-SLIDE, package sparsenet/slide/dslide), each a layer with
	// its own hash tables tuned to its share: a training step exchanges
	// per-sample softmax sums between the shares instead of logits, and
	// predictions merge their top-k lists. With one worker every share
	// lives in its process. With job.workers W > 1 the layer is always
	// split into W shares, one per worker, which train in rounds over gRPC
	// (PeerListen); owners must then be 1 (the default: one share per
	// worker) or W.
	//
	// The default value is 1: one layer (one share per worker with
	// several workers).
	Owners int `yaml:"owners" zero:"refused"`
	// PeerListen is the address a worker of a SLIDE job with several
	// workers serves its share of the layer on (the other workers' rounds
	// and predictions, package sparsenet/slide/dslide/dslidenet), and
	// PeerAdvertise the address the others dial, published in etcd. An
	// empty PeerAdvertise is the listener's address, or, when PeerListen
	// names no host, the address of the interface this machine reaches
	// other hosts through.
	//
	// The default value of PeerListen is "127.0.0.1:0" (any free port,
	// this machine only: set a host and port reachable from the other
	// workers' machines on a cluster); PeerAdvertise's is empty.
	PeerListen    string `yaml:"peer_listen"`
	PeerAdvertise string `yaml:"peer_advertise"`
	// Exchange is what the shares of a layer split between workers send
	// each other in a round: "sparse" (D-SLIDE: per sample and share, the
	// largest logit and two sums) or "dense" (dense model parallelism:
	// every share's logits of every sample). Both train the same model;
	// "dense" is there to compare the two over a network.
	//
	// The default value is "sparse".
	Exchange string `yaml:"exchange"`
}

// TrainConfig controls the training loop.
type TrainConfig struct {
	// BatchSize is the number of samples per mini-batch, at most
	// MaxBatchSize.
	//
	// The default value (also for 0) is 256.
	BatchSize int `yaml:"batch_size" zero:"refused"`
	// Epochs is the number of passes over the training data.
	//
	// The default value (also for 0) is 1.
	Epochs int `yaml:"epochs" zero:"refused"`
	// Shuffle shuffles the training data at every epoch, in bounded
	// memory (reader.WindowSource): the worker's file splits are read in
	// blocks in an order shuffled for the epoch (seeded by model.seed and
	// the epoch), and the stream is
	// read into a window of ShuffleWindow bytes at a time whose sample
	// groups, cut into chunks of at most ShuffleChunk consecutive samples,
	// are shuffled and trained. Chunks keep compression (a chunk's samples
	// share their upper-level lines) while mixing users across batches. A
	// checkpoint names the window and how much of it was trained, so a
	// resumed job neither loses nor repeats a sample. With InMemory the
	// whole training data is read into memory once and shuffled whole at
	// every epoch. With false, files are streamed in order with exact file
	// positions.
	//
	// The default value is true.
	Shuffle *bool `yaml:"shuffle"`
	// ShuffleWindow is the payload a shuffle window holds, in bytes
	// (reader.WindowBytes: about 10 bytes per feature); the window's
	// store holds about as much (reader.Pack), and the worker's heap grows
	// by up to twice that (the collector's headroom). A shuffled epoch reads the
	// share in blocks of a sixteenth of the window, in a shuffled order,
	// so that a window mixes groups from all over the data. Data that
	// fits in one window is shuffled whole, and read once for all epochs.
	//
	// The default value is 256 MiB (268435456).
	ShuffleWindow int64 `yaml:"shuffle_window" zero:"refused"`
	// InMemory reads the whole training data into memory once, instead of
	// streaming it through a window: the shuffle is over the whole data.
	// Before it loads, the worker prints its estimate of the memory the
	// data takes, and refuses (an error, not an out-of-memory kill) when
	// the estimate exceeds MemoryLimit.
	//
	// The default value is false.
	InMemory bool `yaml:"in_memory"`
	// MemoryLimit bounds the memory InMemory data may take, in bytes.
	//
	// The default value is half of the machine's memory (or of GOMEMLIMIT
	// when that is set and lower).
	MemoryLimit int64 `yaml:"memory_limit" zero:"refused"`
	// ShuffleChunk is the most samples of one group kept together by
	// Shuffle. Larger chunks compress training batches more; smaller ones
	// mix more users into a batch (on MovieLens-100K, chunks of 16 cost
	// about 0.002 test AUC against 1, see BENCHMARKS.md).
	//
	// The default value (also for 0) is 16.
	ShuffleChunk int `yaml:"shuffle_chunk" zero:"refused"`
	// Compress turns on multi-prefix-tree compression of batches (see
	// model.field_levels). With false every field is treated as level 0.
	//
	// The default value is true.
	Compress *bool `yaml:"compress"`
	// Pipeline runs reading, batching, pulling and training as concurrent
	// stages joined by bounded queues. With false the stages run one after
	// another for each batch, and each push is waited for (for comparison).
	//
	// The default value is true.
	Pipeline *bool `yaml:"pipeline"`
	// RereadShared has the pipelined worker read the rows a batch shares
	// with the batch before it again, with the dense parameters, once
	// that batch's push is applied, before the batch trains: pulled a
	// batch ahead, they would miss that batch's update. It matters where
	// every batch holds the same frequent ids (fields of a few values)
	// and costs a wait for each push and a small pull per batch. Tables
	// with admission, a budget or expiry keep the rows pulled ahead.
	//
	// The default value is true.
	RereadShared *bool `yaml:"reread_shared"`
	// Sync trains in sync mode: every batch is a round shared by all
	// workers; the shards apply a round, with its workers' gradients
	// averaged, once every worker has pushed its part (or has run out of
	// data for the epoch), and no worker pulls the next round's rows
	// before that (a barrier per iteration). Batches run one after
	// another (no pipeline, no prefetching). Not with kafka (a stream has
	// no common rounds); the job must be in sync mode from its start.
	//
	// The default value is false (asynchronous: each push is applied on
	// its own, workers never wait for one another).
	Sync bool `yaml:"sync"`
	// Format is the format of -train/-test files: libffm, libfm (libsvm is
	// an alias), group (the sample-group format), xml (XMLRepository),
	// criteo (Criteo TSV) or parquet (Parquet files, read as Columns
	// says).
	//
	// The default value is the format the extension of the training files
	// names (FormatOf: .libfm and .libsvm libfm, .libffm libffm, .group
	// group, .parquet parquet, a local directory by its first file's
	// name), else "libffm". Build infers it likewise when neither the
	// file nor a flag gives it.
	Format string `yaml:"format"`
	// Columns maps the columns of Parquet files (format parquet) to the
	// label and the fields: the label column, and per field its column,
	// kind (token, value, dense or bucket) and, for user-level columns,
	// user: true (consecutive rows of one user form a sample group). See
	// reader.ColumnMap and package reader/parquetsrc.
	//
	// It also maps a row service's table (worker -rows: the Python
	// package's Job.fit serving a DataFrame; package reader/rowsrc), the
	// job then having no job.train.
	//
	// The default value is empty; required with format parquet, refused
	// with the other formats' files.
	Columns reader.ColumnMap `yaml:"columns"`
	// OnError says what a malformed input line does: stop the job, or skip
	// it (it is counted and reported).
	//
	// The default value is "stop".
	OnError string `yaml:"on_error"`
	// EvalEvery evaluates on the test set every N batches as well as after
	// each epoch.
	//
	// The default value is 0 (after each epoch only).
	EvalEvery int `yaml:"eval_every"`
	// EvalBatchSize is the batch size of evaluation.
	//
	// The default value (also for 0) is 4096; at most MaxBatchSize.
	EvalBatchSize int `yaml:"eval_batch_size" zero:"refused"`
	// ValidMetric is the validation set's figure that judges the model
	// (job.valid): auc or logloss for the CTR model; p@1, p@3 or p@5 for
	// a slide output (sparse inference when it is on, else dense).
	//
	// The default value is auc (p@1 for a slide output).
	ValidMetric string `yaml:"valid_metric"`
	// Patience stops the job once that many validations in a row did not
	// beat the best by more than MinDelta; the best model is kept.
	//
	// The default value is 0: the job trains every epoch (the best model
	// is kept all the same).
	Patience int `yaml:"patience"`
	// MinDelta is how much better than the best a validation figure must
	// be to count as better.
	//
	// The default value is 0.
	MinDelta float64 `yaml:"min_delta"`
	// MaxInflightPushes bounds asynchronous pushes in flight; training waits
	// when the bound is reached.
	//
	// The default value (also for 0) is 2; at most MaxInFlight.
	MaxInflightPushes int `yaml:"max_inflight_pushes" zero:"refused"`
	// PrefetchBatches is how many batches ahead are loaded and pulled while
	// the current one trains (their rows may then miss the updates of the
	// batches before them, as in any asynchronous mode). The pipelined
	// worker pulls at least 1 batch ahead, so 0 acts as 1 there; with
	// train.pipeline: false nothing is read or pulled ahead.
	//
	// The pipelined CTR worker keeps that many pulls in flight at once,
	// which hides a pull's round trip to shards on other hosts.
	//
	// The default value is 1: on a 2-core machine whose shards share the
	// worker's cores, depths 2 to 4 bought no throughput (the processes
	// are CPU-bound; the worker's wait on pulls fell from 51% to 16%) and
	// moved the test AUC by at most 0.0008 over 3 seeds (BENCHMARKS.md,
	// "Issue 50, step 3"). Raise it when the shards are on other hosts.
	PrefetchBatches *int `yaml:"prefetch_batches"`
	// DenseThreads is the number of goroutines one MLP forward or backward
	// pass splits its matrix products over; 0 means every core
	// (GOMAXPROCS).
	//
	// The default value is 0.
	DenseThreads int `yaml:"dense_threads"`
	// ProgressEvery is the interval between progress lines.
	//
	// The default value is 2s.
	ProgressEvery time.Duration `yaml:"progress_every" zero:"refused"`
	// Autotune searches the job's settings before it trains (package
	// autotune, the autotune section): the sparse and dense learning
	// rates, the embedding dim, the hidden layers and, with
	// autotune.kinds, the model kind, each trial scored on the
	// validation set (never the test set); the winner is written as a
	// YAML file and trained as the job. worker -local only.
	//
	// The default value is false.
	Autotune bool `yaml:"autotune"`
}

// DataConfig configures the built-in generated CTR dataset.
type DataConfig struct {
	// TrainSamples is the number of generated training samples.
	//
	// The default value is 500000.
	TrainSamples int `yaml:"train_samples" zero:"refused"`
	// TestSamples is the number of generated test samples.
	//
	// The default value is 40000.
	TestSamples int `yaml:"test_samples" zero:"refused"`
	// ValidSamples is the number of generated validation samples (a
	// stream of their own, like the test set's: job.valid for the
	// generated data).
	//
	// The default value is 0: no validation set.
	ValidSamples int `yaml:"valid_samples"`
	// Config is the generator's own configuration (package
	// reader/synth/datagen: fields, user_fields, mean_bag, vocab, zipf_s,
	// samples_per_user, users, seed, world_seed, ctr, logit_std,
	// rank_scale, interaction_share), with its defaults.
	datagen.Config `yaml:",inline"`
}

// Default returns a Config with every default filled in.
func Default() Config {
	var c Config
	c.EnsureDefaults()
	return c
}

// EnsureDefaults fills every zero field with its default.
func (c *Config) EnsureDefaults() {
	m := &c.Model
	if m.Kind == "" {
		m.Kind = KindMLP
	}
	if m.Kind == KindDCNv2 {
		setInt(&m.CrossLayers, 2)
	}
	if len(m.Tables) == 0 {
		m.Tables = []ams.TableSpec{kindTable(m.Kind, m.Output.Kind)}
	}
	if m.Wide == nil {
		wide := m.Kind == KindFM || m.Kind == KindDeepFM || m.Kind == KindWDL
		m.Wide = &wide
	}
	if *m.Wide && m.Kind != KindLR && m.TableIndex(WideTable) < 0 {
		m.Tables = append(m.Tables, ams.TableSpec{Name: WideTable, Dim: 1, Optimizer: m.Tables[0].Optimizer,
			Init: ams.InitSpec{Kind: ams.InitZeros}})
	}
	for i := range m.Tables {
		m.Tables[i].EnsureDefaults()
	}
	if m.Pooling == "" {
		m.Pooling = "sum"
	}
	if m.Hidden == nil && (m.Kind == KindLR || m.Kind == KindFM) {
		m.Hidden = []int{}
	}
	if m.Hidden == nil {
		m.Hidden = []int{200, 80}
	}
	if m.DenseOptimizer.Name == "" {
		m.DenseOptimizer.Name = "adam"
	}
	if m.DenseOptimizer.LR == 0 {
		m.DenseOptimizer.LR = 0.001
	}
	m.DenseOptimizer.EnsureDefaults()
	m.DenseSchedule.EnsureDefaults()
	if m.Seed == 0 {
		m.Seed = 1
	}
	m.Sequence.ensureDefaults(m.Kind)
	m.Output.EnsureDefaults()
	c.Train.ensureDefaults(c.Job.Train)
	if c.Train.ValidMetric == "" {
		c.Train.ValidMetric = MetricAUC
		if m.Output.Kind == OutputSLIDE {
			c.Train.ValidMetric = "p@1"
		}
	}
	if k := &c.Kafka; k.Enabled() {
		if k.CommitEvery == 0 {
			k.CommitEvery = time.Second
		}
		if k.MaxWait == 0 {
			k.MaxWait = 200 * time.Millisecond
		}
	}
	setInt(&c.Job.Workers, 1)
	if c.Job.SplitBytes == 0 {
		c.Job.SplitBytes = 64 << 20
	}
	c.Snapshot.EnsureDefaults()
	c.Export.EnsureDefaults()
	c.Autotune.ensureDefaults()
	if c.Train.Autotune && len(c.Job.Train) > 0 && len(c.Job.Valid) == 0 && c.Job.Holdout == 0 && !c.Kafka.Enabled() {
		c.Job.Holdout = DefaultHoldout
	}
	d := &c.Data
	setInt(&d.TrainSamples, 500000)
	setInt(&d.TestSamples, 40000)
	d.Config.EnsureDefaults()
}

// The sparse defaults of the CTR zoo's kinds (issue 47): Adagrad whose
// accumulator starts at 1e-4 (between PyTorch's 0 and TensorFlow's 0.1;
// eps 1e-10) at a learning rate per kind, embeddings drawn uniform in
// +-0.01, lr's table of dim 1 from zeros. Chosen on validation splits of
// Frappe, MovieLens-100K and the generated data, never on their test files
// (bench/zoo.sh DEFAULTS=1 SPLIT=valid; BENCHMARKS.md "Issue 47" has the
// trials). Against PyTorch at its own defaults, TensorFlow's start, the
// default before, lost every kind 0.003 to 0.055 of validation AUC on
// MovieLens (it slows the rare ids most); PyTorch's own start lost 0.003
// to 0.028 on the generated data's for mlp, dcnv2 and wdl; 1e-4 won or
// tied on all three splits for every kind but deepfm on Frappe's (-0.0013).
const (
	// ZooAccumulator is the zoo kinds' Adagrad initial_accumulator.
	ZooAccumulator = 1e-4
	// ZooEps is the zoo kinds' Adagrad eps.
	ZooEps = 1e-10
)

// zooLR is the sparse learning rate of each kind of the CTR zoo: 0.15 for
// fm and deepfm (with train.reread_shared, 0.1 left them under PyTorch on
// Frappe's validation split, 0.15 above it on all three), 0.1 for mlp,
// PyTorch's 0.05 for lr, dcnv2 and wdl, which lost up to 0.026 of
// validation AUC at 0.1 (from PyTorch's start) on the generated data's
// split.
var zooLR = map[string]float32{
	KindMLP: 0.1, KindFM: 0.15, KindDeepFM: 0.15, KindLR: 0.05, KindWDL: 0.05, KindDCNv2: 0.05,
}

// kindTable is the table a model of kind with output gets when its config
// lists none: the zoo's defaults for the six CTR kinds, else (din, dien,
// the SLIDE output) TensorFlow's Adagrad start at 0.05, measured with them
// in their own issues.
func kindTable(kind, output string) ams.TableSpec {
	t := ams.TableSpec{Name: "emb", Dim: 18,
		Optimizer: ams.OptimizerSpec{Name: ams.OptAdagrad, LR: 0.05},
		Init:      ams.InitSpec{Kind: ams.InitUniform, Scale: 0.01}}
	if lr, ok := zooLR[kind]; ok && (output == "" || output == OutputLogit) {
		t.Optimizer = ams.OptimizerSpec{Name: ams.OptAdagrad, LR: lr, InitialAccumulator: ZooAccumulator, Eps: ZooEps}
	}
	if kind == KindLR {
		t.Dim, t.Init = 1, ams.InitSpec{Kind: ams.InitZeros}
	}
	return t
}

// ensureDefaults fills the zero fields of t with their defaults (Format
// from train, the job's training files).
func (t *TrainConfig) ensureDefaults(train []string) {
	yes, one := true, 1
	for _, b := range []**bool{&t.Shuffle, &t.Compress, &t.Pipeline} {
		if *b == nil {
			v := yes
			*b = &v
		}
	}
	if t.RereadShared == nil {
		v := yes
		t.RereadShared = &v
	}
	if t.PrefetchBatches == nil {
		v := one
		t.PrefetchBatches = &v
	}
	setInt(&t.BatchSize, 256)
	setInt(&t.Epochs, 1)
	if t.Format == "" {
		t.Format = FormatOf(train)
	}
	if t.OnError == "" {
		t.OnError = "stop"
	}
	setInt(&t.EvalBatchSize, 4096)
	setInt(&t.ShuffleChunk, 16)
	if t.ShuffleWindow == 0 {
		t.ShuffleWindow = DefaultShuffleWindow
	}
	if t.MemoryLimit == 0 {
		t.MemoryLimit = defaultMemoryLimit()
	}
	setInt(&t.MaxInflightPushes, 2)
	if t.ProgressEvery == 0 {
		t.ProgressEvery = 2 * time.Second
	}
}

// unjoin returns the errors joined in err (err itself if none are).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func setInt(p *int, v int) {
	if *p == 0 {
		*p = v
	}
}

// EnsureDefaults fills every zero field with its default.
func (o *OutputConfig) EnsureDefaults() {
	if o.Kind == "" {
		o.Kind = OutputLogit
	}
	if o.Hidden == nil {
		o.Hidden = []int{}
	}
	if k, err := slide.ParseKind(o.Hash); err == nil {
		o.Family = k
	}
	o.Config.EnsureDefaults()
	if o.Hash == "" {
		o.Hash = o.Family.String()
	}
	if o.Eval == "" {
		o.Eval = "both"
	}
	if o.ProgressiveEvery == nil {
		four := 4
		o.ProgressiveEvery = &four
	}
	if o.Owners == 0 {
		o.Owners = 1
	}
	if o.PeerListen == "" {
		o.PeerListen = DefaultPeerListen
	}
	if o.Exchange == "" {
		o.Exchange = "sparse"
	}
}

// DefaultPeerListen is OutputConfig.PeerListen's default.
const DefaultPeerListen = "127.0.0.1:0"

// validate appends the problems of a "slide" output.
func (o *OutputConfig) validate(c *Config, bad func(string, ...any)) {
	switch o.Kind {
	case OutputLogit:
		return
	case OutputSLIDE:
	default:
		bad("model.output.kind %q is not %s or %s", o.Kind, OutputLogit, OutputSLIDE)
		return
	}
	if c.Train.Format != "xml" {
		bad("model.output.kind slide reads XMLRepository data: train.format is %q, want xml", c.Train.Format)
	}
	if c.Kafka.Enabled() {
		bad("model.output.kind slide does not train from Kafka")
	}
	if o.Labels < 0 {
		bad("model.output.labels %d is negative", o.Labels)
	}
	for i, h := range o.Hidden {
		if h <= 0 {
			bad("model.output.hidden[%d] = %d is not positive", i, h)
		}
	}
	// The layer's own checks, with the sizes the job learns from the data
	// stood in for.
	if _, err := slide.ParseKind(o.Hash); err != nil {
		bad("model.output.hash: %v", err)
	}
	sc := o.Config
	sc.Dim, sc.InputDim = max(o.Labels, 1), 1
	if err := sc.Validate(); err != nil {
		for _, e := range unjoin(err) {
			bad("model.output: %v", e)
		}
	}
	if o.Eval != "sparse" && o.Eval != "dense" && o.Eval != "both" {
		bad("model.output.eval %q is not sparse, dense or both", o.Eval)
	}
	if o.EvalLimit < 0 {
		bad("model.output.eval_limit %d is negative", o.EvalLimit)
	}
	if o.Exchange != "sparse" && o.Exchange != "dense" {
		bad("model.output.exchange %q is not sparse or dense", o.Exchange)
	}
	if o.Owners < 0 || o.Labels > 0 && o.Owners > o.Labels {
		bad("model.output.owners %d is not in [1, labels]", o.Owners)
	}
	if o.ProgressiveEvery != nil && *o.ProgressiveEvery < 0 {
		bad("model.output.progressive_every %d is negative", *o.ProgressiveEvery)
	}
	if len(c.Model.Tables) != 1 {
		bad("model.output.kind slide uses one embedding table, model.tables has %d", len(c.Model.Tables))
	}
}

// TableNames lists the names of the model's tables.
func (c *Config) TableNames() []string {
	var out []string
	for _, t := range c.Model.Tables {
		out = append(out, t.Name)
	}
	return out
}

// validated, when a test sets it, is called by every Validate: the tests
// that hold a process to one validation count the calls.
var validated func()

// Validate reports every problem at once, each wrapping ErrInvalid.
func (c *Config) Validate() error {
	if validated != nil {
		validated()
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	}
	c.Model.validate(c, bad)
	c.Train.validate(bad, len(c.Job.Train) > 0)
	c.validateSources(bad)
	c.validateAutotune(bad)
	if err := c.Snapshot.Validate(); err != nil {
		bad("%v", err)
	}
	if err := c.Export.Validate(c.TableNames()); err != nil {
		bad("%v", err)
	}
	d := &c.Data
	if d.TrainSamples <= 0 || d.TestSamples <= 0 {
		bad("data: train_samples %d and test_samples %d must be positive", d.TrainSamples, d.TestSamples)
	}
	if err := d.Config.Validate(); err != nil {
		bad("data: %v", err)
	}
	return errors.Join(errs...)
}

// validateBudget reports a table budget that cannot hold one batch's
// rows: a batch of n samples may pull n rows of the table per field that
// uses it (at least one field), all from one shard.
func (m *ModelConfig) validateBudget(t ams.TableSpec, batch int, bad func(string, ...any)) {
	if t.Budget.IsZero() || batch <= 0 {
		return
	}
	fields := 0
	for _, name := range m.FieldTables {
		if name == t.Name {
			fields++
		}
	}
	if len(m.FieldTables) == 0 && len(m.Tables) > 0 && m.Tables[0].Name == t.Name {
		fields = m.Fields
	}
	need := int64(batch) * int64(max(fields, 1))
	if t.Budget.Rows > 0 && t.Budget.Rows < need {
		bad("model.tables: table %q: budget.rows %d is below one batch's rows (train.batch_size %d x %d fields = %d)", t.Name, t.Budget.Rows, batch, max(fields, 1), need)
	}
	if tab, err := ams.NewTable(t); err == nil && t.Budget.Bytes > 0 && t.Budget.Bytes < need*int64(tab.RowBytes()) {
		bad("model.tables: table %q: budget.bytes %d is below one batch's rows (%d rows of %d bytes = %d)", t.Name, t.Budget.Bytes, need, tab.RowBytes(), need*int64(tab.RowBytes()))
	}
}

// validate appends the problems of the model section (c is the whole
// config, which the output's checks read).
func (m *ModelConfig) validate(c *Config, bad func(string, ...any)) {
	names := map[string]bool{}
	for _, t := range m.Tables {
		if err := t.Validate(); err != nil {
			bad("model.tables: %w", err)
		}
		if names[t.Name] {
			bad("model.tables: table %q declared twice", t.Name)
		}
		names[t.Name] = true
		m.validateBudget(t, c.Train.BatchSize, bad)
	}
	if m.Fields < 0 {
		bad("model.fields %d is negative", m.Fields)
	}
	if len(m.FieldTables) > 0 && m.Fields > 0 && len(m.FieldTables) != m.Fields {
		bad("model.field_tables names %d tables for %d fields", len(m.FieldTables), m.Fields)
	}
	for f, name := range m.FieldTables {
		if !names[name] {
			bad("model.field_tables[%d]: unknown table %q", f, name)
		}
	}
	if len(m.FieldLevels) > 0 && m.Fields > 0 && len(m.FieldLevels) != m.Fields {
		bad("model.field_levels gives %d levels for %d fields", len(m.FieldLevels), m.Fields)
	}
	for f, l := range m.FieldLevels {
		if l < 0 || l >= MaxLevels {
			bad("model.field_levels[%d] = %d is not in [0, %d)", f, l, MaxLevels)
		}
	}
	if m.Pooling != "sum" && m.Pooling != "mean" {
		bad("model.pooling %q is not sum or mean", m.Pooling)
	}
	switch m.Kind {
	case KindMLP, KindLR, KindFM, KindDeepFM, KindDCNv2, KindWDL, KindDIN, KindDIEN:
	default:
		bad("model.kind %q is not one of mlp, lr, fm, deepfm, dcnv2, wdl, din, dien", m.Kind)
	}
	m.validateSequence(bad)
	m.validateWide(bad)
	if (m.Kind == KindLR || m.Kind == KindFM) && len(m.Hidden) > 0 {
		bad("model.kind %s has no hidden layers, but model.hidden is %v (leave it out, or use kind mlp or deepfm)", m.Kind, m.Hidden)
	}
	if m.CrossLayers < 0 || m.CrossLayers > MaxLayers || (m.CrossLayers > 0) != (m.Kind == KindDCNv2) {
		bad("model.cross_layers %d: dcnv2's cross layers, in [1, %d] with kind dcnv2 only", m.CrossLayers, MaxLayers)
	}
	if len(m.Hidden) > MaxLayers {
		bad("model.hidden lists %d layers, more than %d", len(m.Hidden), MaxLayers)
	}
	for i, h := range m.Hidden {
		if h <= 0 || h > MaxHidden {
			bad("model.hidden[%d] = %d is not in [1, %d]", i, h, MaxHidden)
		}
	}
	if err := m.DenseSchedule.Validate(); err != nil {
		bad("model.dense_schedule: %w", err)
	}
	if err := m.DenseOptimizer.Validate(); err != nil {
		bad("model.dense_optimizer: %w", err)
	}
	m.Output.validate(c, bad)
}

// Upper bounds of the train section's sizes: beyond them a setting is a
// mistake (a typo, a unit slip), refused at once instead of failing hours
// later or taking the machine's memory. Zero is the documented default
// of each in Go (EnsureDefaults), refused when written in a file or a
// flag (see the package doc); a negative value is an error.
const (
	// MaxBatchSize bounds train.batch_size and train.eval_batch_size: a
	// batch's ids go to the shards in one request each, at most
	// ams.MaxRequestIDs (4Mi) ids.
	MaxBatchSize = 1 << 18
	// MaxEpochs bounds train.epochs.
	MaxEpochs = 1 << 20
	// MaxInFlight bounds train.prefetch_batches and
	// train.max_inflight_pushes: each is a batch's buffers held at once.
	MaxInFlight = 64
	// MaxHidden bounds the width of a hidden layer and MaxLayers their
	// number (model.hidden).
	MaxHidden, MaxLayers = 1 << 16, 64
)

// TableIndex returns the index of the table named name, or -1.
func (m *ModelConfig) TableIndex(name string) int {
	for i, t := range m.Tables {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// HasWide reports whether the model has the wide part (Wide).
func (m *ModelConfig) HasWide() bool { return m.Wide != nil && *m.Wide }

// validateWide appends the problems of the wide part.
func (m *ModelConfig) validateWide(bad func(string, ...any)) {
	i := m.TableIndex(WideTable)
	switch {
	case m.Kind == KindWDL && !m.HasWide():
		bad("model.kind wdl with model.wide false: Wide & Deep is the MLP plus the wide part (use kind mlp for the MLP alone)")
	case m.Kind == KindLR && m.HasWide():
		bad("model.wide with kind lr: logistic regression is the wide part itself (its table holds the weights)")
	case m.HasWide() && i < 0:
		bad("model.wide: no table %q", WideTable)
	case m.HasWide() && m.Tables[i].Dim != 1:
		bad("model.wide: table %q has dim %d, the wide part's weights need dim 1", WideTable, m.Tables[i].Dim)
	case m.HasWide() && slices.Contains(m.FieldTables, WideTable):
		bad("model.field_tables names table %q, which is the wide part's: every field is in it already", WideTable)
	}
}

// validate appends the problems of the train section, files saying
// whether the job trains on files (job.train).
func (t *TrainConfig) validate(bad func(string, ...any), files bool) {
	if t.BatchSize <= 0 || t.BatchSize > MaxBatchSize {
		bad("train.batch_size %d is not in [1, %d] (the default: 256)", t.BatchSize, MaxBatchSize)
	}
	if t.Epochs <= 0 || t.Epochs > MaxEpochs {
		bad("train.epochs %d is not in [1, %d] (the default: 1)", t.Epochs, MaxEpochs)
	}
	f, err := reader.ParseFormat(t.Format)
	if err != nil {
		bad("train.format: %v", err)
	}
	switch {
	case f == reader.Parquet, !files && (t.Columns.Label != "" || len(t.Columns.Fields) > 0): // Parquet, or a row service's table
		if err := t.Columns.Validate(); err != nil {
			for _, e := range unjoin(err) {
				bad("train.%v", strings.TrimPrefix(e.Error(), reader.ErrBadOptions.Error()+": "))
			}
		}
	case err == nil && (t.Columns.Label != "" || len(t.Columns.Fields) > 0):
		bad("train.columns maps the columns of Parquet files: train.format is %s, not parquet", t.Format)
	}
	if _, err := reader.ParseErrorPolicy(t.OnError); err != nil {
		bad("train.on_error: %v", err)
	}
	if t.ShuffleChunk < 0 {
		bad("train.shuffle_chunk %d is negative", t.ShuffleChunk)
	}
	if t.ShuffleWindow < 0 || t.MemoryLimit < 0 {
		bad("train.shuffle_window %d or train.memory_limit %d is negative", t.ShuffleWindow, t.MemoryLimit)
	}
	if t.EvalEvery < 0 {
		bad("train.eval_every %d is negative", t.EvalEvery)
	}
	if t.Patience < 0 || t.MinDelta < 0 || math.IsNaN(t.MinDelta) {
		bad("train.patience %d and train.min_delta %v must not be negative", t.Patience, t.MinDelta)
	}
	if t.DenseThreads < 0 {
		bad("train.dense_threads %d is negative", t.DenseThreads)
	}
	if t.EvalBatchSize <= 0 || t.EvalBatchSize > MaxBatchSize {
		bad("train.eval_batch_size %d is not in [1, %d] (the default: 4096)", t.EvalBatchSize, MaxBatchSize)
	}
	if t.PrefetchBatches != nil && (*t.PrefetchBatches < 0 || *t.PrefetchBatches > MaxInFlight) {
		bad("train.prefetch_batches %d is not in [0, %d]", *t.PrefetchBatches, MaxInFlight)
	}
	if t.MaxInflightPushes <= 0 || t.MaxInflightPushes > MaxInFlight {
		bad("train.max_inflight_pushes %d is not in [1, %d] (the default: 2)", t.MaxInflightPushes, MaxInFlight)
	}
	if t.ProgressEvery < 0 {
		bad("train.progress_every %v is negative", t.ProgressEvery)
	}
}

// validateSources appends the problems of where the job's data comes
// from: the kafka and job sections, and how they combine with train.
func (c *Config) validateSources(bad func(string, ...any)) {
	t := &c.Train
	if k := &c.Kafka; k.Enabled() {
		if k.Topic == "" {
			bad("kafka.topic is required with kafka.brokers")
		}
		if t.Epochs != 1 {
			bad("train.epochs %d with kafka: a topic is read once, from the positions in the model (use 1)", t.Epochs)
		}
		if t.Sync {
			bad("train.sync with kafka: a stream has no rounds common to all workers (use asynchronous training)")
		}
		if k.CommitEvery < 0 || k.MaxWait < 0 {
			bad("kafka.commit_every %v and kafka.max_wait %v must not be negative", k.CommitEvery, k.MaxWait)
		}
	} else if c.Kafka.Topic != "" || c.Kafka.Streaming {
		bad("kafka.topic or kafka.streaming without kafka.brokers")
	}
	if c.Job.Workers < 1 || c.Job.SplitBytes < 0 {
		bad("job: workers %d must be at least 1 and split_bytes %d not negative", c.Job.Workers, c.Job.SplitBytes)
	}
	if len(c.Job.Test) > 0 && len(c.Job.Train) == 0 && !c.Kafka.Enabled() {
		bad("job.test needs job.train or kafka")
	}
	if len(c.Job.Train) > 0 && c.Kafka.Enabled() {
		bad("job.train and kafka: train from files or from Kafka, not both")
	}
	if c.Kafka.Enabled() && c.Train.Format == reader.Parquet.String() {
		bad("train.format parquet is for files: Kafka messages are lines or sample groups (libffm, libfm, group)")
	}
	c.validateValidation(bad)
}

// Validation metrics (TrainConfig.ValidMetric).
const (
	MetricAUC     = "auc"
	MetricLogLoss = "logloss"
)

// HigherIsBetter reports whether a higher figure of metric m (a
// TrainConfig.ValidMetric) is better.
func HigherIsBetter(m string) bool { return m != MetricLogLoss }

// HasValidation reports whether the job has a validation set: files, or
// generated samples.
func (c *Config) HasValidation() bool {
	return len(c.Job.Valid) > 0 || c.Job.Holdout > 1 || len(c.Job.Train) == 0 && !c.Kafka.Enabled() && c.Data.ValidSamples > 0
}

// validateValidation appends the problems of the validation set and its
// metric.
func (c *Config) validateValidation(bad func(string, ...any)) {
	t := &c.Train
	slide := c.Model.Output.Kind == OutputSLIDE
	switch {
	case slide && !slices.Contains([]string{"p@1", "p@3", "p@5"}, t.ValidMetric):
		bad("train.valid_metric %q: a slide output is validated by p@1, p@3 or p@5", t.ValidMetric)
	case !slide && t.ValidMetric != MetricAUC && t.ValidMetric != MetricLogLoss:
		bad("train.valid_metric %q is not auc or logloss", t.ValidMetric)
	}
	if c.Kafka.Enabled() && c.HasValidation() {
		bad("job.valid with kafka: a stream is validated progressively (every batch is scored before it trains)")
	}
	if len(c.Job.Valid) > 0 && len(c.Job.Train) == 0 {
		bad("job.valid needs job.train (for the generated data: data.valid_samples)")
	}
	if t.Patience > 0 && !c.HasValidation() {
		bad("train.patience %d needs a validation set (job.valid, or data.valid_samples for the generated data)", t.Patience)
	}
	if c.Data.ValidSamples < 0 {
		bad("data.valid_samples %d is negative", c.Data.ValidSamples)
	}
	switch h := c.Job.Holdout; {
	case h == 0:
	case h < 2:
		bad("job.holdout %d: hold out 1 in every N sample groups, N at least 2 (0: none)", h)
	case len(c.Job.Valid) > 0:
		bad("job.holdout with job.valid: give one validation set")
	case len(c.Job.Train) == 0 || c.Kafka.Enabled():
		bad("job.holdout needs training files (for the generated data: data.valid_samples)")
	case slide:
		bad("job.holdout with a slide output: not built yet (give job.valid)")
	}
}

// Parse decodes YAML (unknown keys are errors), fills defaults and
// validates: Build(YAML(b)). A key written as zero where zero means
// nothing (train.batch_size: 0, ...; see the package doc) is an error.
func Parse(b []byte) (Config, error) { return Build(YAML(b)) }

// Load reads and parses a YAML file: Build(File(path)).
func Load(path string) (Config, error) { return Build(File(path)) }

// Marshal renders the config as YAML.
func (c *Config) Marshal() ([]byte, error) { return yaml.Marshal(c) }

// Write writes c as YAML to w (worker -print-config).
func (c *Config) Write(w io.Writer) error {
	b, err := c.Marshal()
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}
