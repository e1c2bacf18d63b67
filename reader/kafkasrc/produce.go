package kafkasrc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/xdlgo/xps/reader"
)

// ProduceOptions configure ProduceFiles.
type ProduceOptions struct {
	// Brokers and Topic say where to write. Required.
	Brokers []string
	Topic   string
	// Format is the files' format. Required.
	Format reader.Format
	// Rate caps the messages per second (0: as fast as the broker takes
	// them).
	Rate float64
	// Limit stops after this many messages (0: all).
	Limit int64
	// Batch is how many messages one write carries. The default value is
	// 1000.
	Batch int
	// Progress receives a line every few seconds and at the end (nil: none).
	Progress io.Writer
}

// ProduceStats counts what ProduceFiles wrote.
type ProduceStats struct {
	Messages int64   `json:"messages"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
}

// ProduceFiles writes the groups of the files into the topic, one message
// per group (the group's lines, joined by '\n'; a header line of the
// format is dropped), spread round-robin over the partitions. Files are
// read in order; with a single partition, messages keep the files' order.
func ProduceFiles(ctx context.Context, paths []string, opts ProduceOptions) (ProduceStats, error) {
	var st ProduceStats
	dec, err := reader.NewDecoder(opts.Format)
	if err != nil {
		return st, fmt.Errorf("kafkasrc: %w", err)
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = 1000
	}
	if opts.Rate > 0 {
		batch = max(1, min(batch, int(opts.Rate/20))) // at least 20 writes a second
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(opts.Brokers...), Topic: opts.Topic, Balancer: &kafka.RoundRobin{},
		BatchSize: batch, BatchBytes: 16 << 20, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr}
	defer w.Close()
	start, lastProgress := time.Now(), time.Now()
	var pending []kafka.Message
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := w.WriteMessages(ctx, pending...); err != nil {
			return fmt.Errorf("kafkasrc: write to %q: %w", opts.Topic, err)
		}
		for _, m := range pending {
			st.Bytes += int64(len(m.Value))
		}
		st.Messages += int64(len(pending))
		pending = pending[:0]
		if opts.Rate > 0 { // pace: message k is due at start + k/rate
			due := start.Add(time.Duration(float64(st.Messages) / opts.Rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		if opts.Progress != nil && time.Since(lastProgress) > 5*time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(opts.Progress, "produced %d messages (%.1f MB) to %s in %.0fs\n", st.Messages, float64(st.Bytes)/1e6,
				opts.Topic, time.Since(start).Seconds())
		}
		return nil
	}
	stop := errStop{}
	emit := func(msg []byte) error {
		if opts.Limit > 0 && st.Messages+int64(len(pending)) >= opts.Limit {
			return stop
		}
		pending = append(pending, kafka.Message{Value: bytes.Clone(msg)})
		if len(pending) >= batch {
			return flush()
		}
		return nil
	}
	for _, path := range paths {
		err := splitGroups(path, dec, emit)
		if err == stop {
			break
		}
		if err != nil {
			return st, err
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	st.Seconds = time.Since(start).Seconds()
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "produced %d messages (%.1f MB) to %s in %.1fs\n", st.Messages, float64(st.Bytes)/1e6,
			opts.Topic, st.Seconds)
	}
	return st, nil
}

type errStop struct{}

func (errStop) Error() string { return "stop" }

// splitGroups calls emit with the text of each group of the file: the lines
// from one that Starts a group up to the next, blank and '#' lines and a
// header dropped.
func splitGroups(path string, dec reader.Decoder, emit func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kafkasrc: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var group []byte
	first := true
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return fmt.Errorf("kafkasrc: %s:%d: line longer than %d bytes", path, lineNo, br.Size())
		}
		if err != nil && err != io.EOF {
			return fmt.Errorf("kafkasrc: %s: %w", path, err)
		}
		eof := err == io.EOF
		line = bytes.TrimRight(line, "\r\n")
		if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] != '#' {
			isHeader := false
			if first {
				first = false
				h, herr := dec.Header(line)
				if herr != nil {
					return fmt.Errorf("kafkasrc: %s:%d: %w", path, lineNo, herr)
				}
				isHeader = h
			}
			if !isHeader {
				if dec.Starts(line) && len(group) > 0 {
					if err := emit(group); err != nil {
						return err
					}
					group = group[:0]
				}
				if len(group) > 0 {
					group = append(group, '\n')
				}
				group = append(group, line...)
			}
		}
		if eof {
			break
		}
	}
	if len(group) > 0 {
		return emit(group)
	}
	return nil
}
