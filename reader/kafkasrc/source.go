package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/xdlgo/xps/reader"
)

// ErrBadPosition is wrapped by the errors about start positions that do
// not fit the topic.
var ErrBadPosition = errors.New("kafkasrc: bad position")

// ErrNoTopic is wrapped when the topic does not exist or has no partitions.
var ErrNoTopic = errors.New("kafkasrc: no such topic")

// ErrStopped is returned by Next once Options.Stop is closed.
var ErrStopped = errors.New("kafkasrc: stopped")

// Scheme prefixes stream names.
const Scheme = "kafka://"

// StreamName names partition p of topic as a stream: "kafka://TOPIC/P".
func StreamName(topic string, partition int) string {
	return Scheme + topic + "/" + strconv.Itoa(partition)
}

// ParseStreamName is the inverse of StreamName.
func ParseStreamName(name string) (topic string, partition int, ok bool) {
	rest, ok := strings.CutPrefix(name, Scheme)
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.Atoi(rest[i+1:])
	if err != nil || p < 0 {
		return "", 0, false
	}
	return rest[:i], p, true
}

// Options configure Open.
type Options struct {
	// Brokers are the bootstrap brokers (host:port). Required.
	Brokers []string
	// Topic is the topic to read. Required.
	Topic string
	// Partitions are the partitions to read. The default value (nil) reads
	// every partition of the topic.
	Partitions []int
	// Format is the messages' format. Required.
	Format reader.Format
	// Namespace is the decoder's reader.DecoderOptions.Namespace. The
	// default value (nil) hashes every field in its own namespace.
	Namespace []uint32
	// OnError is the malformed-message policy. The default is StopOnBad.
	OnError reader.ErrorPolicy
	// Start holds positions to resume from (streams of other topics or
	// partitions are ignored). A partition without one starts at its
	// earliest offset.
	Start []reader.Position
	// Streaming makes the source wait for new messages forever instead of
	// ending at the end offsets seen by Open.
	Streaming bool
	// MaxWait is how long a fetch waits for new messages. The default value
	// is 200ms.
	MaxWait time.Duration
	// Queue is the read-ahead, in messages, of each partition's fetcher.
	// The default value is 1024.
	Queue int
	// MaxBytes is the most bytes one fetch returns. The default value is
	// 8 MiB.
	MaxBytes int
	// Dialer connects to the brokers. The default value is kafka-go's.
	Dialer *kafka.Dialer
	// Idle, when positive, makes a streaming Next return reader.ErrIdle
	// after waiting that long for a message, so that the caller can train
	// on a partial batch. The default value (0) waits without limit.
	Idle time.Duration
	// Stop, when closed, makes Next return ErrStopped (also while it
	// waits), so that an owner can take the partitions away between two
	// groups. The default value (nil) never stops.
	Stop <-chan struct{}
}

// partition is the state of one partition. pos is written by Next's
// goroutine only; hwm by the fetcher.
type partition struct {
	id        int
	name      string
	pos       reader.Position // the next message and sample to return
	end       int64           // bounded: the end offset; -1 when streaming
	hwm       atomic.Int64    // the high-water mark last seen by the fetcher
	r         *kafka.Reader
	remaining bool // bounded: messages are left to read
}

// item is what a fetcher hands to Next: a message or an error.
type item struct {
	p   *partition
	msg kafka.Message
	err error
}

// Source reads groups from the partitions of a topic (see the package doc).
type Source struct {
	opts   Options
	dec    reader.Decoder
	parts  []*partition
	byID   map[int]*partition
	items  chan item
	last   *partition // the partition of the last group returned
	stats  reader.SourceStats
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the fetchers
	closer chan struct{}  // bounded: closed when items is closed
	closed bool
	idle   *time.Timer // Options.Idle's timer, reused
	err    error       // sticky: a fetch error or a malformed message under StopOnBad
}

var _ reader.Source = (*Source)(nil)

// Open looks the topic up, checks the start positions against the
// partitions' offsets, and starts a fetcher per partition.
func Open(ctx context.Context, opts Options) (*Source, error) {
	if len(opts.Brokers) == 0 || opts.Topic == "" {
		return nil, fmt.Errorf("kafkasrc: brokers and topic are required")
	}
	dec, err := reader.NewDecoderWith(opts.Format, reader.DecoderOptions{Namespace: opts.Namespace})
	if err != nil {
		return nil, fmt.Errorf("kafkasrc: %w", err)
	}
	opts.ensureDefaults()
	offsets, err := PartitionOffsets(ctx, opts.Brokers, opts.Topic)
	if err != nil {
		return nil, err
	}
	ids := opts.Partitions
	if ids == nil {
		for _, o := range offsets {
			ids = append(ids, o.Partition)
		}
	}
	s := &Source{opts: opts, dec: dec, byID: map[int]*partition{}}
	starts := map[string]reader.Position{}
	for _, p := range opts.Start {
		starts[p.File] = p
	}
	for _, id := range ids {
		k := slices.IndexFunc(offsets, func(o Offsets) bool { return o.Partition == id })
		if k < 0 {
			return nil, fmt.Errorf("%w: topic %q has no partition %d (it has %d)", ErrNoTopic, opts.Topic, id, len(offsets))
		}
		if _, dup := s.byID[id]; dup {
			return nil, fmt.Errorf("kafkasrc: partition %d listed twice", id)
		}
		p, err := newPartition(&opts, offsets[k], starts)
		if err != nil {
			return nil, err
		}
		s.parts = append(s.parts, p)
		s.byID[id] = p
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureDefaults fills the zero fields that have defaults.
func (o *Options) ensureDefaults() {
	if o.MaxWait <= 0 {
		o.MaxWait = 200 * time.Millisecond
	}
	if o.Queue <= 0 {
		o.Queue = 1024
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 8 << 20
	}
}

// newPartition returns the state of partition o.Partition, whose offsets
// are o, starting at its position in starts (checked against o) or else
// at its earliest offset.
func newPartition(opts *Options, o Offsets, starts map[string]reader.Position) (*partition, error) {
	p := &partition{id: o.Partition, name: StreamName(opts.Topic, o.Partition), end: -1}
	p.pos = reader.Position{File: p.name, Offset: o.First}
	if st, ok := starts[p.name]; ok {
		switch {
		case st.Offset < o.First:
			return nil, fmt.Errorf("%w: %s starts at offset %d, before the earliest offset %d: messages were deleted (retention), samples would be lost",
				ErrBadPosition, p.name, st.Offset, o.First)
		case st.Offset > o.Last:
			return nil, fmt.Errorf("%w: %s starts at offset %d, after the end offset %d: the position belongs to another topic or the topic was recreated",
				ErrBadPosition, p.name, st.Offset, o.Last)
		case st.Index < 0:
			return nil, fmt.Errorf("%w: %s: negative sample index %d", ErrBadPosition, p.name, st.Index)
		}
		p.pos = st
	}
	p.hwm.Store(o.Last)
	if !opts.Streaming {
		p.end = o.Last
		p.remaining = p.pos.Offset < p.end
	}
	return p, nil
}

// start starts a fetcher for every partition (bounded: every one with
// messages left) and, when bounded, the goroutine that closes s.items once
// they are all done. On an error it closes s.
func (s *Source) start() error {
	opts := &s.opts
	s.items = make(chan item, opts.Queue)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	for _, p := range s.parts {
		if !opts.Streaming && !p.remaining {
			continue
		}
		p.r = kafka.NewReader(kafka.ReaderConfig{Brokers: opts.Brokers, Topic: opts.Topic, Partition: p.id,
			Dialer: opts.Dialer, QueueCapacity: opts.Queue, MinBytes: 1, MaxBytes: opts.MaxBytes, MaxWait: opts.MaxWait,
			ReadBatchTimeout: opts.MaxWait + 10*time.Second})
		if err := p.r.SetOffset(p.pos.Offset); err != nil {
			s.Close()
			return fmt.Errorf("kafkasrc: %s: %w", p.name, err)
		}
		s.wg.Add(1)
		go s.fetch(p)
	}
	if !opts.Streaming {
		s.closer = make(chan struct{})
		go func() { // closes items when every bounded fetcher is done
			defer close(s.closer)
			s.wg.Wait()
			close(s.items)
		}()
	}
	return nil
}

// fetch reads p's messages into s.items until its end (bounded), an error,
// or Close.
func (s *Source) fetch(p *partition) {
	defer s.wg.Done()
	for {
		msg, err := p.r.FetchMessage(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				select {
				case s.items <- item{p: p, err: fmt.Errorf("kafkasrc: fetch %s: %w", p.name, err)}:
				case <-s.ctx.Done():
				}
			}
			return
		}
		if msg.HighWaterMark > p.hwm.Load() {
			p.hwm.Store(msg.HighWaterMark)
		}
		if p.end >= 0 && msg.Offset >= p.end {
			return // a bounded read ends at the end offset seen by Open
		}
		select {
		case s.items <- item{p: p, msg: msg}:
		case <-s.ctx.Done():
			return
		}
		if p.end >= 0 && msg.Offset+1 >= p.end {
			return
		}
	}
}

// Next fills g with the next message's group. Bounded sources return
// io.EOF when every partition has reached its end offset; streaming ones
// wait for new messages until ctx ends.
func (s *Source) Next(ctx context.Context, g *reader.Group) error {
	if s.closed {
		return reader.ErrSourceClosed
	}
	if s.err != nil {
		return s.err
	}
	for {
		var it item
		var ok bool
		select {
		case <-s.opts.Stop:
			return ErrStopped
		default:
		}
		select {
		case it, ok = <-s.items:
		default:
			var idle <-chan time.Time
			if s.opts.Idle > 0 && s.opts.Streaming {
				if s.idle == nil {
					s.idle = time.NewTimer(s.opts.Idle)
				} else {
					s.idle.Reset(s.opts.Idle)
				}
				idle = s.idle.C
			}
			select {
			case it, ok = <-s.items:
			case <-ctx.Done():
				return ctx.Err()
			case <-s.opts.Stop:
				return ErrStopped
			case <-idle:
				return reader.ErrIdle
			}
		}
		if !ok {
			return io.EOF
		}
		if it.err != nil {
			s.err = it.err
			return it.err
		}
		p, msg := it.p, it.msg
		if msg.Offset < p.pos.Offset {
			continue // a refetch of a message already returned
		}
		idx := 0
		if msg.Offset == p.pos.Offset {
			idx = p.pos.Index
		}
		p.pos = reader.Position{File: p.name, Offset: msg.Offset + 1}
		s.last = p
		s.stats.Bytes += int64(len(msg.Value))
		if err := reader.DecodeMessage(s.dec, msg.Value, g); err != nil {
			err = fmt.Errorf("kafkasrc: %s offset %d: %w", p.name, msg.Offset, err)
			if s.opts.OnError == reader.StopOnBad {
				s.err = err
				return err
			}
			s.stats.AddSkipped(err)
			continue
		}
		if idx >= g.NumSamples() {
			continue // resumed after the message's last sample
		}
		g.Pos = reader.Position{File: p.name, Offset: msg.Offset, Index: idx}
		g.Next = p.pos
		s.stats.Groups++
		s.stats.Samples += int64(g.NumSamples() - idx)
		return nil
	}
}

// Position returns the next position of the partition of the last group
// returned (of the first partition before any). Positions has them all.
func (s *Source) Position() reader.Position {
	if s.last != nil {
		return s.last.pos
	}
	if len(s.parts) > 0 {
		return s.parts[0].pos
	}
	return reader.Position{}
}

// Positions returns, for every partition, the position of the next sample
// not yet returned, ordered by partition.
func (s *Source) Positions() []reader.Position {
	out := make([]reader.Position, 0, len(s.parts))
	for _, p := range s.parts {
		out = append(out, p.pos)
	}
	slices.SortFunc(out, func(a, b reader.Position) int { return strings.Compare(a.File, b.File) })
	return out
}

// PartitionLag is how far one partition's position is behind its end.
type PartitionLag struct {
	Partition int   `json:"partition"`
	Lag       int64 `json:"lag"`
}

// PartitionLags returns each partition's lag: the high-water mark last
// seen minus the offset of the next message to return.
func (s *Source) PartitionLags() []PartitionLag {
	out := make([]PartitionLag, len(s.parts))
	for i, p := range s.parts {
		out[i] = PartitionLag{Partition: p.id, Lag: max(p.hwm.Load()-p.pos.Offset, 0)}
	}
	return out
}

// Lag returns the total lag over the partitions, in messages.
func (s *Source) Lag() int64 {
	var n int64
	for _, l := range s.PartitionLags() {
		n += l.Lag
	}
	return n
}

// Stats returns counts of what was read (Bytes counts message values).
func (s *Source) Stats() reader.SourceStats { return s.stats }

// Close stops and joins the fetchers and closes their connections.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	s.wg.Wait()
	if s.closer != nil {
		<-s.closer
	}
	var errs []error
	for _, p := range s.parts {
		if p.r != nil {
			errs = append(errs, p.r.Close())
		}
	}
	return errors.Join(errs...)
}

// Offsets are a partition's earliest offset and end offset (the offset the
// next message produced will get).
type Offsets struct {
	Partition   int
	First, Last int64
}

// PartitionOffsets returns the offsets of every partition of topic, ordered
// by partition.
func PartitionOffsets(ctx context.Context, brokers []string, topic string) ([]Offsets, error) {
	tr := &kafka.Transport{} // its own pool: no connections outlive the call
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("kafkasrc: metadata of %q from %v: %w", topic, brokers, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		return nil, fmt.Errorf("%w: %q on %v: %v", ErrNoTopic, topic, brokers, terr)
	}
	// One request per kind of offset: a broker answers both kinds with
	// timestamp -1, which is all kafka-go's merge of the two answers for a
	// partition goes by, so asking for both at once may swap them.
	var parts []int
	for _, p := range md.Topics[0].Partitions {
		parts = append(parts, p.ID)
	}
	first, err := listOffsets(ctx, cl, topic, parts, kafka.FirstOffsetOf)
	if err != nil {
		return nil, err
	}
	last, err := listOffsets(ctx, cl, topic, parts, kafka.LastOffsetOf)
	if err != nil {
		return nil, err
	}
	var out []Offsets
	for _, p := range parts {
		out = append(out, Offsets{Partition: p, First: first[p], Last: last[p]})
	}
	slices.SortFunc(out, func(a, b Offsets) int { return a.Partition - b.Partition })
	return out, nil
}

// listOffsets asks for one kind of offset (kind is kafka.FirstOffsetOf or
// kafka.LastOffsetOf) of every partition in parts.
func listOffsets(ctx context.Context, cl *kafka.Client, topic string, parts []int, kind func(int) kafka.OffsetRequest) (map[int]int64, error) {
	reqs := make([]kafka.OffsetRequest, len(parts))
	for i, p := range parts {
		reqs[i] = kind(p)
	}
	lo, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("kafkasrc: offsets of %q: %w", topic, err)
	}
	out := make(map[int]int64, len(parts))
	for _, po := range lo.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("kafkasrc: offsets of %q partition %d: %w", topic, po.Partition, po.Error)
		}
		// kafka-go files the one answer under FirstOffset or LastOffset by
		// its timestamp, leaving the other at its start value (0 for the
		// kind asked, -1 for the other): the answer is the larger.
		out[po.Partition] = max(po.FirstOffset, po.LastOffset)
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("kafkasrc: offsets of %q: no answer for partition %d", topic, p)
		}
	}
	return out, nil
}

// AssignPartitions deals partitions 0..n-1 to workers round-robin: worker i
// of w gets i, i+w, ... Every partition goes to exactly one worker.
func AssignPartitions(n, workers, index int) []int {
	var out []int
	for p := index; p < n; p += max(workers, 1) {
		out = append(out, p)
	}
	return out
}
