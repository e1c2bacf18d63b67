package kafkatest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Options configure Start.
type Options struct {
	// Port is the first broker's loopback port. The default value (0)
	// picks a free port.
	Port int
	// Brokers is the number of brokers. The default value is 1.
	Brokers int
	// Topics maps topic names to partition counts, created at start.
	Topics map[string]int
}

// Broker is a running in-process cluster. Close stops it.
type Broker struct {
	c *kfake.Cluster
}

// Start starts a cluster listening on loopback.
func Start(opts Options) (*Broker, error) {
	n := max(opts.Brokers, 1)
	ports := make([]int, n)
	for i := range ports {
		if opts.Port != 0 {
			ports[i] = opts.Port + i
		}
	}
	kopts := []kfake.Opt{kfake.NumBrokers(n), kfake.Ports(ports...),
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort("127.0.0.1", port))
		})}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start broker: %w", err)
	}
	b := &Broker{c: c}
	for name, parts := range opts.Topics {
		if err := b.CreateTopic(context.Background(), name, parts); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// Addrs returns the brokers' host:port addresses.
func (b *Broker) Addrs() []string { return b.c.ListenAddrs() }

// CreateTopic creates a topic with the given number of partitions through
// the protocol's CreateTopics request.
func (b *Broker) CreateTopic(ctx context.Context, name string, partitions int) error {
	if partitions < 1 {
		return fmt.Errorf("kafkatest: topic %q: %d partitions", name, partitions)
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(b.Addrs()...), Timeout: 10 * time.Second, Transport: tr}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}}})
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %q: %w", name, err)
	}
	if err := resp.Errors[name]; err != nil {
		return fmt.Errorf("kafkatest: create topic %q: %w", name, err)
	}
	return nil
}

// Close stops the cluster.
func (b *Broker) Close() { b.c.Close() }

// ParseTopics parses "name:partitions,name:partitions" (partitions
// default to 1).
func ParseTopics(s string) (map[string]int, error) {
	out := map[string]int{}
	if s == "" {
		return out, nil
	}
	for _, t := range strings.Split(s, ",") {
		name, parts, ok := strings.Cut(t, ":")
		if !ok {
			parts = "1"
		}
		n, err := strconv.Atoi(parts)
		if err != nil || n < 1 || name == "" {
			return nil, fmt.Errorf("kafkatest: bad topic %q: want name:partitions", t)
		}
		out[name] = n
	}
	return out, nil
}

// Produce writes msgs (record values) into topic, spread round-robin over
// its partitions, and waits until the broker has them all.
func Produce(ctx context.Context, addrs []string, topic string, msgs [][]byte) error {
	tr := &kafka.Transport{} // its own pool: no connections outlive the call
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addrs...), Topic: topic, Balancer: &kafka.RoundRobin{},
		BatchTimeout: time.Millisecond, BatchSize: 1000, RequiredAcks: kafka.RequireAll, Transport: tr} // acknowledged: readers see every message once Produce returns
	defer w.Close()
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		km[i] = kafka.Message{Value: m}
	}
	if err := w.WriteMessages(ctx, km...); err != nil {
		return fmt.Errorf("kafkatest: produce to %q: %w", topic, err)
	}
	return nil
}
