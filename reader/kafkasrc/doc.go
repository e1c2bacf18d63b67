// Package kafkasrc reads training samples from Kafka topics, with positions
// that the model, not a consumer group, keeps.
//
// # Messages
//
// One message (record value) holds one sample group in the topic's format:
// one line of a line format (libFM, libFFM, XMLRepository without its
// header, Criteo), or the lines of one group of the sample-group format
// (reader.DecodeMessage). Keys, headers and timestamps are ignored. A
// malformed message stops the source with an error naming the topic,
// partition and offset (reader.StopOnBad), or is counted and skipped
// (reader.SkipBad).
//
// # Positions
//
// Every partition is a stream named StreamName(topic, p) =
// "kafka://TOPIC/P". A position in it is reader.Position{File: that name,
// Offset: the offset of a message, Index: the index of the next sample of
// that message's group}; the position after a whole message at offset o is
// {o+1, 0}. A Source reads its partitions concurrently and interleaves
// their messages, keeping each partition's order; Positions returns one
// position per partition. Opening a Source with Options.Start set to
// positions yields exactly the samples after them: nothing lost, nothing
// repeated. No offsets are committed to the broker: whoever owns the model
// stores positions (in the AMS beside the rows, see the worker).
//
// A start position before the partition's earliest offset (messages
// deleted by retention) or after its end is refused with ErrBadPosition:
// samples would be lost or the position belongs to another topic.
//
// # Modes
//
// Bounded (the default) reads every partition up to the end offset it had
// when Open ran, then Next returns io.EOF: a batch job over a topic.
// Streaming never ends: Next waits for new messages; Lag reports, per
// partition and in total, the end offset (high-water mark) last seen minus
// the position, in messages.
//
// # Concurrency
//
// A Source is used by one goroutine (Next, Position, Positions, Lag, Stats,
// Close). It owns one fetch goroutine per partition (a kafka-go Reader bound
// to that partition, no consumer group) that reads ahead into a bounded
// queue; Close stops and joins them all.
//
// # Files
//
//   - source.go: Options, Source (Open, Next, Positions, Lag, Close), stream names, PartitionOffsets and AssignPartitions.
//   - produce.go: ProduceFiles, sample files written to a topic one group per message.
package kafkasrc
