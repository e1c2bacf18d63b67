package scheduler

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/internal/controlplane"
	"github.com/xdlgo/xps/internal/membership"
	"github.com/xdlgo/xps/reader"
)

// BindFlags defines on fs the flags of the scheduler binary that set o:
// -id (ID), -shards (Shards, 2 unless given), -partitions (Partitions) and
// -lease-ttl (LeaseTTL).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ID, "id", "", "member id of this scheduler (default <hostname>-<pid>)")
	fs.IntVar(&o.Shards, "shards", 2, "number of AMS shards the cluster forms with")
	fs.IntVar(&o.Partitions, "partitions", ams.DefaultPartitions, "number of virtual partitions")
	fs.DurationVar(&o.LeaseTTL, "lease-ttl", membership.DefaultTTL, "TTL of the scheduler's etcd lease")
}

// SetJob sets the options that the job's config decides: the training
// data and how the workers share it (its job section; files of
// train.format xml are kept whole), the Kafka topic to deal (its kafka
// section) and the snapshot policy (its snapshot section). It fails when
// train.format is not a format.
func (o *Options) SetJob(cfg *config.Config) error {
	f, err := reader.ParseFormat(cfg.Train.Format)
	if err != nil {
		return err
	}
	o.Train, o.Workers, o.SplitBytes, o.Unsplittable = cfg.Job.Train, cfg.Job.Workers, cfg.Job.SplitBytes, f == reader.XML
	o.KafkaBrokers, o.KafkaTopic = cfg.Kafka.Brokers, cfg.Kafka.Topic
	o.Snapshot = cfg.Snapshot
	return nil
}

// SnapshotNow is the scheduler binary's -snapshot-now: it asks the running
// scheduler of the cluster under prefix for a snapshot
// (controlplane.RequestSnapshot), waits for it and writes its result to w
// as one line of JSON. A failed snapshot is returned as an error.
func SnapshotNow(ctx context.Context, cli *clientv3.Client, prefix string, w io.Writer) error {
	conn, err := controlplane.New(cli, prefix)
	if err != nil {
		return err
	}
	res, err := conn.RequestSnapshot(ctx)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(w, string(b))
	return nil
}
