package serveload

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
	"github.com/xdlgo/xps/serve"
)

// FreshOptions describe a freshness run: how long samples written into the
// training topic take to show in the server's answers.
type FreshOptions struct {
	URL     string   // the server's /predict
	Brokers []string // the training topic's
	Topic   string
	// Field is the probe feature's field; each trial's probe is a new token
	// in it, so its row starts at its initial value.
	Field uint32
	// Burst is the number of samples a trial writes, in libFFM: half of
	// them positive with the probe's feature, half negative with a
	// control's (a new token too), each with Template's features.
	Burst    int
	Template string
	Trials   int
	// Timeout bounds one trial; Threshold is how much the probe's score
	// must gain on the control's, from their gap before the burst, for the
	// samples to count as shown.
	Timeout   time.Duration
	Threshold float32
	Dir       string // for the bursts' files
}

// FreshResult is a freshness run's figures: seconds from the start of a
// burst's write to the first answer that shows it.
type FreshResult struct {
	Trials  int       `json:"trials"`
	Missed  int       `json:"missed"`
	P50s    float64   `json:"p50_s"`
	P99s    float64   `json:"p99_s"`
	MaxS    float64   `json:"max_s"`
	Seconds []float64 `json:"seconds"`
}

// Freshness runs o.Trials trials one after the other.
func Freshness(ctx context.Context, o FreshOptions) (FreshResult, error) {
	var res FreshResult
	run := time.Now().UnixNano() % 1e6
	for i := range o.Trials {
		probe := fmt.Sprintf("%d:fresh%d-%d", o.Field, run, i)
		ctrl := fmt.Sprintf("%d:ctrl%d-%d", o.Field, run, i)
		d, err := freshTrial(ctx, o, probe, ctrl, i)
		if err != nil {
			return res, err
		}
		res.Trials++
		if d < 0 {
			res.Missed++
			continue
		}
		res.Seconds = append(res.Seconds, d.Seconds())
	}
	if s := slices.Sorted(slices.Values(res.Seconds)); len(s) > 0 {
		q := func(p float64) float64 { return s[int(p*float64(len(s)-1)+0.5)] }
		res.P50s, res.P99s, res.MaxS = q(0.5), q(0.99), s[len(s)-1]
	}
	return res, nil
}

// freshTrial writes a burst of samples that move the probe's score up and
// the control's down, and polls the server until the probe has gained
// the threshold on the control; -1: timed out.
func freshTrial(ctx context.Context, o FreshOptions, probe, ctrl string, i int) (time.Duration, error) {
	req := serve.Request{Candidates: []string{probe + " " + o.Template, ctrl + " " + o.Template}}
	body, _ := json.Marshal(req)
	var base serve.Response
	if err := post(ctx, http.DefaultClient, o.URL, body, &base); err != nil {
		return 0, err
	}
	if len(base.Scores) != 2 {
		return 0, fmt.Errorf("serveload: %d scores for 2 candidates", len(base.Scores))
	}
	gap0 := base.Scores[0] - base.Scores[1]
	var b strings.Builder
	for range o.Burst / 2 { // the probe's samples positive, the control's negative
		fmt.Fprintf(&b, "1 %s:1 %s\n0 %s:1 %s\n", probe, o.Template, ctrl, o.Template)
	}
	path := filepath.Join(o.Dir, fmt.Sprintf("burst-%d.libffm", i))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return 0, err
	}
	defer os.Remove(path)
	start := time.Now()
	if _, err := kafkasrc.ProduceFiles(ctx, []string{path}, kafkasrc.ProduceOptions{Brokers: o.Brokers, Topic: o.Topic,
		Format: reader.LibFFM}); err != nil {
		return 0, err
	}
	for time.Since(start) < o.Timeout {
		var resp serve.Response
		if err := post(ctx, http.DefaultClient, o.URL, body, &resp); err != nil {
			return 0, err
		}
		if len(resp.Scores) == 2 && resp.Scores[0]-resp.Scores[1]-gap0 > o.Threshold {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return -1, nil
}
