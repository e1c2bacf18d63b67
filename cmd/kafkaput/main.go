// Command kafkaput writes sample files into a Kafka topic, one message per
// sample group (one line of a line format, one group of the sample-group
// format), spread round-robin over the topic's partitions: the producer of
// the README's streaming example and of the Kafka benchmarks.
//
// Usage:
//
//	kafkaput -brokers 127.0.0.1:9092 -topic ctr -format libffm [-rate N] [-limit N] FILE...
//
// Flags:
//
//	-brokers   bootstrap brokers, comma-separated (default 127.0.0.1:9092)
//	-topic     topic to write (required; it must exist)
//	-format    libffm, libfm, libsvm, group, xml or criteo (default libffm)
//	-rate      messages per second at most (default 0: as fast as possible)
//	-limit     stop after this many messages (default 0: all)
//	-json      print the summary as JSON
//
// Progress goes to stderr every few seconds.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
)

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	topic := flag.String("topic", "", "topic to write (required)")
	format := flag.String("format", "libffm", "file format: libffm, libfm, libsvm, group, xml, criteo")
	rate := flag.Float64("rate", 0, "messages per second at most (0: no limit)")
	limit := flag.Int64("limit", 0, "stop after this many messages (0: all)")
	asJSON := flag.Bool("json", false, "print the summary as JSON")
	flag.Usage = cli.Usage(flag.CommandLine, "kafkaput", "FILE...")
	flag.Parse()
	if err := run(*brokers, *topic, *format, *rate, *limit, *asJSON, flag.Args()); err != nil {
		cli.Fatal("kafkaput", err)
	}
}

func run(brokers, topic, format string, rate float64, limit int64, asJSON bool, files []string) error {
	if topic == "" || len(files) == 0 {
		return fmt.Errorf("-topic and at least one file are required (see -help)")
	}
	f, err := reader.ParseFormat(format)
	if err != nil {
		return err
	}
	paths, err := reader.ExpandPaths(files)
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	st, err := kafkasrc.ProduceFiles(ctx, paths, kafkasrc.ProduceOptions{Brokers: cli.SplitList(brokers), Topic: topic,
		Format: f, Rate: rate, Limit: limit, Progress: os.Stderr})
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(st)
	}
	fmt.Printf("kafkaput: %d messages, %.1f MB in %.2fs (%.0f messages/s)\n", st.Messages, float64(st.Bytes)/1e6,
		st.Seconds, float64(st.Messages)/max(st.Seconds, 1e-9))
	return nil
}
