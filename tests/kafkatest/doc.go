// Package kafkatest runs a Kafka-protocol broker inside the process, for
// tests, examples and benchmarks on a machine where no Kafka broker package
// exists. The broker is github.com/twmb/franz-go/pkg/kfake: an in-memory
// cluster that speaks the real Kafka wire protocol on loopback TCP, so
// clients (kafka-go, librdkafka's kcat) talk to it exactly as to Kafka. It
// is not Kafka: there is no replication to other machines, and data lives
// in memory for the broker's lifetime.
//
// cmd/kafkad runs it as its own process. It is a test server, in the
// testing wing (tests/): outside tests/ only test files import it, and
// cmd/kafkad.
//
// # Files
//
//   - kafkatest.go: Options, Start, the Broker (Addrs, CreateTopic, Close), ParseTopics (cmd/kafkad's -topics), Produce.
package kafkatest
