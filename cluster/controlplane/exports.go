package controlplane

import (
	"context"
	"encoding/json"
	"time"
)

// The export request protocol, the snapshot request protocol's twin:
// anyone asks the leading scheduler for a model export now by writing the
// request key (RequestExport, as `scheduler -export-now` does); the
// leader watches it and records the outcome of every export attempt
// (PutExportResult), which the asker waits for.

// ExportResult is the outcome of one model export attempt.
type ExportResult struct {
	Seq  uint64    `json:"seq"`
	Kind string    `json:"kind"` // full or delta
	Base uint64    `json:"base,omitempty"`
	Time time.Time `json:"time"`
	// Seconds is the time the shards took to write it, PauseSeconds the
	// time the workers were paused for it (asked to pause to resumed).
	Seconds      float64 `json:"seconds"`
	PauseSeconds float64 `json:"pause_seconds"`
	// Rows and Deletes count the rows and the deletions written, Bytes
	// the files' size; Samples is the samples the model had trained.
	Rows    int64    `json:"rows"`
	Deletes int64    `json:"deletes"`
	Bytes   int64    `json:"bytes"`
	Samples int64    `json:"samples"`
	Removed []uint64 `json:"removed,omitempty"`
	Error   string   `json:"error,omitempty"`
	// Request is the etcd revision of the newest export request the
	// scheduler had seen when the attempt began.
	Request int64 `json:"request,omitempty"`
}

// PutExportResult records the outcome of the latest export attempt.
func (c *Conn) PutExportResult(ctx context.Context, r ExportResult) error {
	return c.putJSON(ctx, ExportLastKey(c.prefix), "export result", r)
}

// RequestExport asks the cluster's scheduler for a model export now and
// waits for the result of an attempt begun after the scheduler saw the
// request; a failed attempt is returned with its error.
func (c *Conn) RequestExport(ctx context.Context) (ExportResult, error) {
	var r ExportResult
	err := c.request(ctx, "export", ExportRequestKey(c.prefix), ExportLastKey(c.prefix), "", func(b []byte) (int64, string, bool) {
		r = ExportResult{}
		ok := json.Unmarshal(b, &r) == nil
		return r.Request, r.Error, ok
	})
	return r, err
}
