package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// JobRecord names the job a cluster runs: every snapshot it takes carries
// ID, and its schedulers restore only snapshots of that job.
type JobRecord struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// ClaimJob records r as the cluster's job unless one is recorded already,
// and returns the recorded one (r, or the earlier record: a scheduler
// that lost a race to another, or one that took over a running job).
func (c *Conn) ClaimJob(ctx context.Context, r JobRecord) (JobRecord, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return JobRecord{}, fmt.Errorf("controlplane: job record: %w", err)
	}
	key := JobKey(c.prefix)
	resp, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(b))).Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return JobRecord{}, fmt.Errorf("controlplane: claim the job record: %w", err)
	}
	if resp.Succeeded {
		return r, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return JobRecord{}, fmt.Errorf("controlplane: claim the job record: %s vanished", key)
	}
	var got JobRecord
	if err := json.Unmarshal(kvs[0].Value, &got); err != nil || got.ID == "" {
		return JobRecord{}, fmt.Errorf("controlplane: bad job record %s: %q", key, kvs[0].Value)
	}
	return got, nil
}

// GetJob returns the cluster's job record, and false when none is
// recorded.
func (c *Conn) GetJob(ctx context.Context) (JobRecord, bool, error) {
	var r JobRecord
	ok, err := c.getJSON(ctx, JobKey(c.prefix), "job record", &r)
	return r, ok, err
}
