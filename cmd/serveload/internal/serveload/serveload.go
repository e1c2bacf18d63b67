package serveload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/serve/servepb"
)

// LoadRequests builds n requests of k candidates each from a test file in
// the sample-group format (a group's level-1 line is its user, its
// level-0 lines candidates) or libFFM (no user features): request i has
// the user of group i (cycling) and k candidate lines taken in turn from
// the whole file.
func LoadRequests(path string, n, k int) ([]serve.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var users, cands []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 0 || strings.HasPrefix(fs[0], "#") || fs[0] == "group":
		case len(fs) >= 3 && fs[0] == "1" && fs[1] == "-": // a group's user line: "1 - - features"
			users = append(users, strings.Join(fs[3:], " "))
		case len(fs) >= 3 && fs[0] == "0" && !strings.Contains(fs[1], ":"): // a group's sample: "0 0 label features"
			cands = append(cands, strings.Join(fs[3:], " "))
		default: // libFFM: "label features"
			cands = append(cands, strings.Join(fs[1:], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("serveload: %s holds no sample", path)
	}
	out := make([]serve.Request, n)
	next := 0
	for i := range out {
		if len(users) > 0 {
			out[i].User = users[i%len(users)]
		}
		out[i].Candidates = make([]string, k)
		for j := range k {
			out[i].Candidates[j] = cands[next%len(cands)]
			next++
		}
	}
	return out, nil
}

// Options describe a load run.
type Options struct {
	URL string // the server's /predict
	// GRPC, when set, is the server's gRPC address: the requests go to
	// its Predictor service (servepb) instead of URL.
	GRPC     string
	Requests []serve.Request
	// InFlight bounds the requests in flight (a closed loop of that many
	// clients).
	InFlight int
	// Duration bounds the run; so does Max requests (0: none).
	Duration time.Duration
	Max      int
	// Flood, when positive, is how many hostile clients send, for the
	// whole run and each in a closed loop, requests of one user with
	// FloodUserFeatures user features and the first request's candidates
	// (issue 48's probe: 32 of 300,000 features); Result.Flood counts
	// their answers by HTTP status.
	Flood             int
	FloodUserFeatures int
}

// Result is a run's figures.
type Result struct {
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	Candidates int     `json:"candidates_per_request"`
	InFlight   int     `json:"in_flight"`
	Seconds    float64 `json:"seconds"`
	RPS        float64 `json:"requests_per_second"`
	P50ms      float64 `json:"p50_ms"`
	P90ms      float64 `json:"p90_ms"`
	P99ms      float64 `json:"p99_ms"`
	MaxMs      float64 `json:"max_ms"`
	FirstError string  `json:"first_error,omitempty"`
	// Flood counts the flood's answers by HTTP status ("error": no
	// answer), with Options.Flood.
	Flood map[string]int `json:"flood,omitempty"`
}

// flood runs o.Flood hostile clients until ctx ends (see Options.Flood)
// and returns their answers by status.
func flood(ctx context.Context, o Options) map[string]int {
	var b strings.Builder
	for i := range o.FloodUserFeatures {
		fmt.Fprintf(&b, "0:f%d ", i)
	}
	req := serve.Request{User: b.String()}
	if len(o.Requests) > 0 {
		req.Candidates = o.Requests[0].Candidates
	}
	body, _ := json.Marshal(req)
	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for range o.Flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			for ctx.Err() == nil {
				code := "error"
				if r, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(body)); err == nil {
					if resp, err := hc.Do(r); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						code = strconv.Itoa(resp.StatusCode)
					}
				}
				if ctx.Err() == nil {
					mu.Lock()
					answers[code]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return answers
}

// Run sends o's requests, in turn, from InFlight clients until Duration
// or Max, and measures each answer's latency.
func Run(ctx context.Context, o Options) (Result, error) {
	bodies := make([][]byte, len(o.Requests))
	for i, r := range o.Requests {
		b, err := json.Marshal(r)
		if err != nil {
			return Result{}, err
		}
		bodies[i] = b
	}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	flooded := make(chan map[string]int, 1)
	if o.Flood > 0 {
		go func() { flooded <- flood(ctx, o) }()
	} else {
		flooded <- nil
	}
	send, closeSend, err := sender(o, bodies)
	if err != nil {
		return Result{}, err
	}
	defer closeSend()
	var (
		next   atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		first  string
		wg     sync.WaitGroup
		start  = time.Now()
		failed = func(err error) {
			mu.Lock()
			if errs++; first == "" {
				first = err.Error()
			}
			mu.Unlock()
		}
	)
	for range o.InFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if o.Max > 0 && i >= int64(o.Max) {
					break
				}
				t0 := time.Now()
				if err := send(ctx, int(i%int64(len(bodies)))); err != nil {
					if ctx.Err() == nil {
						failed(err)
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	cancel()
	slices.Sort(lat)
	res := Result{Requests: len(lat), Errors: errs, InFlight: o.InFlight, Seconds: secs, FirstError: first, Flood: <-flooded}
	if len(o.Requests) > 0 {
		res.Candidates = len(o.Requests[0].Candidates)
	}
	if len(lat) > 0 {
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		res.RPS, res.P50ms, res.P90ms, res.P99ms, res.MaxMs = float64(len(lat))/secs, q(0.5), q(0.9), q(0.99), q(1)
	}
	return res, nil
}

// sender returns the func that sends request i of o (its JSON body
// bodies[i], over HTTP; or over gRPC with o.GRPC), and the func that
// closes its connections.
func sender(o Options, bodies [][]byte) (func(ctx context.Context, i int) error, func(), error) {
	if o.GRPC == "" {
		tr := &http.Transport{MaxIdleConnsPerHost: o.InFlight}
		hc := &http.Client{Transport: tr}
		return func(ctx context.Context, i int) error { return post(ctx, hc, o.URL, bodies[i], nil) }, tr.CloseIdleConnections, nil
	}
	conn, err := grpc.NewClient(o.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	c := servepb.NewPredictorClient(conn)
	reqs := make([]*servepb.PredictRequest, len(o.Requests))
	for i, r := range o.Requests {
		reqs[i] = &servepb.PredictRequest{User: r.User, Candidates: r.Candidates}
	}
	send := func(ctx context.Context, i int) error {
		_, err := c.Predict(ctx, reqs[i])
		return err
	}
	return send, func() { conn.Close() }, nil
}

// post sends body to url and, with out, decodes the JSON answer into it;
// an answer other than 200 is an error with its text.
func post(ctx context.Context, hc *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}
