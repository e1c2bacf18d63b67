// Command kafkad runs a Kafka-protocol broker (franz-go's kfake, in memory;
// see tests/kafkatest) as its own process on loopback, for multi-process
// tests, examples and benchmarks on machines without a Kafka installation.
// Clients (the worker, kafkaput, kcat) talk to it over the real Kafka wire
// protocol. It is not Kafka: data lives in memory until it exits.
//
// Usage:
//
//	kafkad [-port 9092] [-topics ctr:4,other:1]
//
// Flags:
//
//	-port     loopback port of the broker (default 9092; 0 picks a free one)
//	-topics   topics to create, as name:partitions, comma-separated
//
// It prints "kafkad serving on ADDR" once ready and stops on SIGINT/SIGTERM.
package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/xdlgo/xps/internal/cli"
	"github.com/xdlgo/xps/tests/kafkatest"
)

func main() {
	port := flag.Int("port", 9092, "loopback port (0: a free port)")
	topics := flag.String("topics", "", "topics to create: name:partitions,...")
	cli.ParseCommandLine("kafkad")
	if err := run(*port, *topics); err != nil {
		cli.Fatal("kafkad", err)
	}
}

func run(port int, topics string) error {
	ts, err := kafkatest.ParseTopics(topics)
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	b, err := kafkatest.Start(kafkatest.Options{Port: port, Topics: ts})
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Printf("kafkad serving on %s (topics: %s)\n", strings.Join(b.Addrs(), ","), topics)
	<-ctx.Done()
	return nil
}
