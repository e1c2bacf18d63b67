package ctrtrain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/client"
	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
)

// PositionKeyPrefix prefixes the AMS state keys of reader positions: a
// Kafka partition's position lives under PositionKeyPrefix + stream name
// (kafka://TOPIC/P) (ams.StreamPositionKey).
const PositionKeyPrefix = ams.StateReaderPrefix

// kafkaJob is the Kafka side of a worker job: which partitions it reads
// (all of them, or the scheduler's deal), the positions kept in the model,
// and the hand-over of partitions when the deal changes.
type kafkaJob struct {
	cfg    config.Config
	conn   *controlplane.Conn
	cl     *client.Client
	in     input // the format, policy and namespaces of the messages; the test files
	name   string
	dealt  bool                             // partitions come from the scheduler's deal
	assign controlplane.PartitionAssignment // the current deal (when dealt)
	// version is the cluster version the worker trains at (the attempt's).
	version uint64
	say     func(string, ...any)
}

func newKafkaJob(env *job.Env) (*kafkaJob, error) {
	in, err := inputOf(env.Config, env.FS)
	if err != nil {
		return nil, err
	}
	return &kafkaJob{cfg: env.Config, conn: env.Conn, cl: env.Client, in: in, name: env.Name,
		dealt: env.Workers() > 1, version: env.Version, say: env.Say}, nil
}

// streamPrefix is the state key prefix of this topic's positions.
func (k *kafkaJob) streamPrefix() string {
	return PositionKeyPrefix + kafkasrc.Scheme + k.cfg.Kafka.Topic + "/"
}

// positions returns the positions of the topic's partitions stored in the
// model.
func (k *kafkaJob) positions(ctx context.Context) ([]reader.Position, error) {
	entries, err := k.cl.GetState(ctx, k.streamPrefix())
	if err != nil {
		return nil, fmt.Errorf("worker: read positions from the model: %w", err)
	}
	out := make([]reader.Position, 0, len(entries))
	for _, e := range entries {
		var p reader.Position
		if err := json.Unmarshal(e.Value, &p); err != nil || PositionKeyPrefix+p.File != e.Key {
			return nil, fmt.Errorf("worker: bad position %q in the model: %q", e.Key, e.Value)
		}
		out = append(out, p)
	}
	return out, nil
}

// commit stores the positions of this topic's streams in the model, and
// the worker's count of applied samples.
func (k *kafkaJob) commit(ctx context.Context, c Checkpoint) error {
	ps := slices.DeleteFunc(slices.Clone(c.Positions), func(p reader.Position) bool {
		return !strings.HasPrefix(PositionKeyPrefix+p.File, k.streamPrefix())
	})
	if err := storePositions(ctx, k.cl, PositionKeyPrefix, ps); err != nil {
		return err
	}
	return checkpoint.Store(ctx, k.cl, k.name, Checkpoint{Applied: c.Applied, Batches: c.Batches, Digest: c.Digest})
}

// storePositions stores positions in the model, each under keyPrefix +
// its stream name.
func storePositions(ctx context.Context, cl *client.Client, keyPrefix string, ps []reader.Position) error {
	var entries []client.StateEntry
	for _, p := range ps {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		entries = append(entries, client.StateEntry{Key: keyPrefix + p.File, Value: b})
	}
	if len(entries) == 0 {
		return nil
	}
	return cl.PutState(ctx, entries)
}

// sync takes the scheduler's current deal: it acknowledges it (this worker
// reads nothing of an older deal any more), then waits until every worker
// of the deal has acknowledged it too, so that no partition of the deal is
// still read, and its positions not yet stored, by its previous owner.
func (k *kafkaJob) sync(ctx context.Context) error {
	if !k.dealt {
		return nil
	}
	for {
		cur, _, err := k.conn.GetPartitionAssignment(ctx)
		if err != nil {
			return err
		}
		if err := k.conn.AckPartitions(ctx, k.name, cur.Generation); err != nil {
			return err
		}
		// Read to the end at this version already (before a lost lease,
		// or by a life of this worker that died): the scheduler deals it
		// nothing any more, and no deal will name it.
		done, _, err := k.conn.PartitionsDone(ctx, k.version)
		if err != nil {
			return err
		}
		if done[k.name] {
			k.assign = cur
			k.say("this worker read its partitions to their end at version %d already: nothing left to read (partition deal %d)", k.version, cur.Generation)
			return nil
		}
		k.say("waiting for the scheduler's partition deal (start it with -kafka and -topic)")
		a, err := k.conn.WaitPartitionAssignment(ctx, k.name, cur.Generation)
		if err != nil {
			return err
		}
		if err := k.conn.AckPartitions(ctx, k.name, a.Generation); err != nil {
			return err
		}
		err = k.conn.WaitPartitionAcks(ctx, a)
		if errors.Is(err, controlplane.ErrReassigned) {
			continue
		}
		if err != nil {
			return err
		}
		k.assign = a
		k.say("partition deal %d: partitions %v of %s", a.Generation, a.Of(k.name), a.Topic)
		return nil
	}
}

// done records that this worker has read its partitions to their end
// (controlplane.MarkPartitionsDone), training at cluster version, so that
// the scheduler deals it no partition any more. When its deal was
// replaced meanwhile, the new deal's partitions may hold messages nobody
// else will read: it returns an error wrapping job.ErrTrainAgain, and the
// next attempt reads them.
func (k *kafkaJob) done(ctx context.Context, version uint64) error {
	if !k.dealt {
		return nil
	}
	ok, err := k.conn.MarkPartitionsDone(ctx, k.name, k.assign.Generation, version)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w: partition deal %d was replaced as this worker read its partitions to their end",
			job.ErrTrainAgain, k.assign.Generation)
	}
	return nil
}

// ackFromNowOn acknowledges every later deal until the returned stop is
// called: for a worker that has finished reading (a bounded job waiting
// for the others), so that a worker joining meanwhile is not kept waiting
// for it. stop joins the goroutine.
func (k *kafkaJob) ackFromNowOn(ctx context.Context) (stop func()) {
	if !k.dealt {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		gen := k.assign.Generation
		for {
			a, err := k.conn.WaitPartitionAssignment(ctx, k.name, gen+1)
			if err != nil {
				return // ctx ended
			}
			gen = a.Generation
			if k.conn.AckPartitions(ctx, k.name, gen) != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// open opens this worker's partitions from the positions in the model.
// With a deal, the source stops (ErrReopen) when a newer deal appears.
func (k *kafkaJob) open(ctx context.Context, bounded bool) (reader.Source, error) {
	kc := k.cfg.Kafka
	start, err := k.positions(ctx)
	if err != nil {
		return nil, err
	}
	o := kafkasrc.Options{Brokers: kc.Brokers, Topic: kc.Topic, Format: k.in.format, Namespace: k.in.ns, OnError: k.in.policy, Start: start,
		Streaming: kc.Streaming && !bounded, MaxWait: kc.MaxWait, Idle: 2 * kc.MaxWait}
	if !k.dealt {
		return kafkasrc.Open(ctx, o)
	}
	o.Partitions = k.assign.Of(k.name)
	if o.Partitions == nil {
		o.Partitions = []int{}
	}
	wctx, cancel := context.WithCancel(context.Background())
	o.Stop = k.conn.WatchReassigned(wctx, k.assign.Generation)
	src, err := kafkasrc.Open(ctx, o)
	if err != nil {
		cancel()
		return nil, err
	}
	return &dealtSource{Source: src, cancel: cancel, gen: k.assign.Generation}, nil
}

// dealtSource is a Kafka source over a deal's partitions: a newer deal
// stops it with ErrReopen.
type dealtSource struct {
	*kafkasrc.Source
	cancel context.CancelFunc // stops the deal watch
	gen    int64
}

func (d *dealtSource) Next(ctx context.Context, g *reader.Group) error {
	err := d.Source.Next(ctx, g)
	if errors.Is(err, kafkasrc.ErrStopped) {
		return fmt.Errorf("%w: partition deal %d replaced", ErrReopen, d.gen)
	}
	return err
}

func (d *dealtSource) Close() error {
	d.cancel()
	return d.Source.Close()
}

// data returns the job's training data from the topic. The shape comes
// from sh (the test set), the first messages after the stored positions,
// and the config.
func (k *kafkaJob) data(ctx context.Context, sh *shapeFinder) (Data, error) {
	kc := k.cfg.Kafka
	src, err := k.open(ctx, true)
	if err != nil {
		return Data{}, err
	}
	g := new(reader.Group)
	for n := 0; n < peekSamples; n += g.NumSamples() {
		err := src.Next(ctx, g)
		if errors.Is(err, io.EOF) || errors.Is(err, ErrReopen) {
			break
		}
		if err != nil {
			src.Close()
			return Data{}, fmt.Errorf("worker: training data: %w", err)
		}
		sh.add(g)
	}
	src.Close()
	mode := "bounded: up to the end offsets at open"
	if kc.Streaming {
		mode = "streaming"
	}
	d := Data{
		Train: func(int, reader.Position) (reader.Source, error) { return k.open(ctx, false) },
		Desc:  fmt.Sprintf("Kafka topic %s on %s (%s, %s)", kc.Topic, strings.Join(kc.Brokers, ","), k.in.format, mode),
	}
	d.Shape, err = sh.shape(k.cfg, k.in.levels())
	if errors.Is(err, ErrNoData) {
		err = fmt.Errorf("%w (the topic has no messages after the stored positions: set model.fields, and model.field_levels for grouped data)", err)
	}
	return d, err
}
