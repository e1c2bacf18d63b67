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
	// Burst is the number of probe samples (label 1, the probe feature and
	// Template's features) a trial writes, in libFFM.
	Burst    int
	Template string
	Trials   int
	// Timeout bounds one trial; Threshold is the gap between the probe's
	// score and a control's (a new token never written, which moves only
	// with the network) that counts as the samples shown.
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

// freshTrial writes a burst of probe samples and polls the server until
// the probe's score leads the control's by the threshold; -1: timed out.
func freshTrial(ctx context.Context, o FreshOptions, probe, ctrl string, i int) (time.Duration, error) {
	var b strings.Builder
	for range o.Burst {
		fmt.Fprintf(&b, "1 %s:1 %s\n", probe, o.Template)
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
	req := serve.Request{Candidates: []string{probe, ctrl}}
	body, _ := json.Marshal(req)
	for time.Since(start) < o.Timeout {
		var resp serve.Response
		if err := postJSON(ctx, o.URL, body, &resp); err != nil {
			return 0, err
		}
		if len(resp.Scores) == 2 && resp.Scores[0]-resp.Scores[1] > o.Threshold {
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

func postJSON(ctx context.Context, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
