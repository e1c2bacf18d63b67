package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps"
	"github.com/xdlgo/xps/cluster"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/export"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/synth/datagen"
	"github.com/xdlgo/xps/serve"
	"github.com/xdlgo/xps/serve/servepb"
)

// genFile writes n generated samples in format f ("libffm" or "group").
func genFile(t testing.TB, path string, seed uint64, n int, f string) {
	t.Helper()
	dc := datagen.Config{Fields: 6, UserFields: 2, MeanBag: 2, Vocab: 300, SamplesPerUser: 6, Users: 500, Seed: seed}
	if n >= 100000 { // a benchmark's size: the default generated data (ctrgen's)
		var c config.Config
		c.EnsureDefaults()
		dc = c.Data.Config
		dc.Seed = seed
	}
	gen, err := datagen.New(dc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if f == "group" {
		_, err = gen.WriteGroups(w, n)
	} else {
		_, err = gen.WriteLibFFM(w, n)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// trainAndExport trains a small model on generated data of format f in
// an embedded cluster, with the final model exported (quantized by q)
// and the test set's scores written; it returns the export store, the
// test file and the scores.
func trainAndExport(t testing.TB, f, q string) (store, test string, scores []float32) {
	return trainAndExportN(t, f, q, 8, 20000)
}

// trainAndExportKind is trainAndExport (fp32) with model.kind kind ("":
// the default).
func trainAndExportKind(t *testing.T, f, kind string) (store, test string, scores []float32) {
	t.Helper()
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train."+f), filepath.Join(dir, "test."+f)
	genFile(t, train, 1, 20000, f)
	genFile(t, test, 2, 600, f)
	store = filepath.Join(dir, "exports")
	cfg := smallJob(f, 8, []string{train}, test, filepath.Join(dir, "scores.txt"))
	if kind != "" {
		cfg.Model.Kind = kind
		if kind == config.KindLR || kind == config.KindFM {
			cfg.Model.Hidden = []int{}
		}
		if kind == config.KindDCNv2 {
			cfg.Model.CrossLayers = 2
		}
		cfg.Model.Wide = nil // the kind's default (fm, deepfm and wdl: the wide part, its table added)
		cfg.EnsureDefaults()
	}
	cfg.Export = export.Policy{Store: store, Every: -1, Quant: export.FP32}
	return store, test, runJob(t, cfg)
}

// trainAndExportN is trainAndExport with tables of dim and n training
// samples. A job of the same arguments trains once per test binary (most
// tests need only some trained model, and training is most of the race
// build's time here): each caller gets its own copy of the directory (the
// files, the export store and the scores), so a test that writes into its
// store changes no other test's.
func trainAndExportN(t testing.TB, f, q string, dim, n int) (store, test string, scores []float32) {
	t.Helper()
	key := fmt.Sprintf("%s-%s-%d-%d", f, q, dim, n)
	trained.Lock()
	defer trained.Unlock()
	src, ok := trained.dirs[key]
	if !ok {
		src = filepath.Join(trained.root, key)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		trainInto(t, src, f, q, dim, n)
		trained.dirs[key] = src
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "exports"), filepath.Join(dir, "test."+f), readScores(t, filepath.Join(dir, "scores.txt"))
}

// trained holds the directories trainAndExportN trained, by its arguments,
// under root (made and removed by TestMain).
var trained struct {
	sync.Mutex
	root string
	dirs map[string]string
}

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "serve-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	trained.root, trained.dirs = root, map[string]string{}
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

// trainInto trains trainAndExportN's job in dir.
func trainInto(t testing.TB, dir, f, q string, dim, n int) {
	t.Helper()
	train, test := filepath.Join(dir, "train."+f), filepath.Join(dir, "test."+f)
	genFile(t, train, 1, n, f)
	genFile(t, test, 2, 600, f)
	cfg := smallJob(f, dim, []string{train}, test, filepath.Join(dir, "scores.txt"))
	cfg.Export = export.Policy{Store: filepath.Join(dir, "exports"), Every: -1, Quant: q}
	runJob(t, cfg)
}

// smallJob is the config of the tests' small model (MLP 16-8, tables of
// dim) on train and test files of format f, writing the test scores to
// scores.
func smallJob(f string, dim int, train []string, test, scores string) config.Config {
	cfg := config.Config{}
	cfg.Model.Hidden = []int{16, 8}
	cfg.Train.BatchSize, cfg.Train.Epochs, cfg.Train.Format = 64, 2, f
	cfg.Model.DenseOptimizer.LR = 0.01
	cfg.Job.Train, cfg.Job.Test, cfg.Job.TestScores = train, []string{test}, scores
	cfg.EnsureDefaults()
	cfg.Model.Tables[0].Dim = dim
	return cfg
}

// runJob runs the job of cfg on a new embedded cluster and returns the
// test scores it wrote.
func runJob(t testing.TB, cfg config.Config) []float32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lc, err := cluster.Start(ctx, cluster.Options{Shards: 2, Prefix: "/xps/serve-test", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if _, err := xps.Train(ctx, job.Options{Config: cfg, Etcd: lc.Etcd(), Prefix: lc.Prefix()}); err != nil {
		t.Fatal(err)
	}
	return readScores(t, cfg.Job.TestScores)
}

func readScores(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for _, l := range strings.Fields(string(b)) {
		x, err := strconv.ParseFloat(l, 32)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, float32(x))
	}
	return out
}

// scoreFile scores every sample group of the test file with s.
func scoreFile(t *testing.T, s *serve.Server, test, f string) []float32 {
	scores, _ := scoreFileLabels(t, s, test, f)
	return scores
}

// scoreFileLabels is scoreFile returning the samples' labels too.
func scoreFileLabels(t *testing.T, s *serve.Server, test, f string) (scores, labels []float32) {
	t.Helper()
	format, err := reader.ParseFormat(f)
	if err != nil {
		t.Fatal(err)
	}
	src, err := reader.OpenFiles([]reader.FileSplit{{Path: test}}, format, reader.StopOnBad)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := reader.ReadAll(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		sc := make([]float32, g.NumSamples())
		if _, err := s.Score(g, sc); err != nil {
			t.Fatal(err)
		}
		scores = append(scores, sc...)
		for i := range g.NumSamples() {
			labels = append(labels, g.Label(i))
		}
	}
	return scores, labels
}

// TestParity: the test set scored by a server from the final export
// agrees with the worker's own evaluation within 1e-5 per score (fp32),
// for flat data and for sample groups (users at level 1), and for every
// model.kind on sample groups.
func TestParity(t *testing.T) {
	cases := []struct{ f, kind string }{{"libffm", ""}, {"group", ""}}
	kinds := []string{config.KindLR, config.KindFM, config.KindDeepFM, config.KindDCNv2, config.KindWDL}
	if raceEnabled { // the race build checks the server's concurrency, the same for every kind
		kinds = kinds[2:3]
	}
	for _, k := range kinds {
		cases = append(cases, struct{ f, kind string }{"group", k})
	}
	for _, c := range cases {
		f := c.f
		t.Run(strings.TrimSuffix(f+"/"+c.kind, "/"), func(t *testing.T) {
			store, test, want := trainAndExportKind(t, f, c.kind)
			s, err := serve.New(serve.Options{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := scoreFile(t, s, test, f)
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d scores, the worker wrote %d", len(got), len(want))
			}
			lo, hi := slices.Min(want), slices.Max(want)
			if hi-lo < 0.05 {
				t.Fatalf("the worker's scores span [%v, %v]: the model learned nothing to compare", lo, hi)
			}
			worst := 0.0
			for i := range got {
				worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > 1e-5 {
				t.Fatalf("largest difference from the worker's scores %g > 1e-5", worst)
			}
			t.Logf("%d scores, largest difference %g", len(got), worst)
		})
	}
}

// TestPredictParsesAsTheTrainingFormat: a request's FIELD:TOKEN[:VALUE]
// features score as the same line read by the libFFM decoder.
func TestPredictParsesAsTheTrainingFormat(t *testing.T) {
	store, test, _ := trainAndExport(t, "libffm", export.Int8)
	s, err := serve.New(serve.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := scoreFile(t, s, test, "libffm")
	fh, err := os.Open(test)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	var cands []string
	for sc.Scan() {
		_, feats, _ := strings.Cut(sc.Text(), " ") // drop the label
		cands = append(cands, feats)
	}
	resp, err := s.Predict(&serve.Request{Candidates: cands[:150]})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range resp.Scores {
		if x != want[i] {
			t.Fatalf("candidate %d: %v, the decoded line scores %v", i, x, want[i])
		}
	}
	for _, bad := range []serve.Request{{}, {Candidates: []string{"x"}}, {Candidates: []string{"1:a:NaN"}}, {User: "a:b", Candidates: []string{"1:a"}}} {
		if _, err := s.Predict(&bad); err == nil {
			t.Errorf("request %+v scored", bad)
		} else {
			t.Logf("refused: %v", err)
		}
	}
}

// TestGRPCAnswersAsHTTP: the gRPC service answers a request as Predict
// does, and maps a bad request to INVALID_ARGUMENT.
func TestGRPCAnswersAsHTTP(t *testing.T) {
	store, _, _ := trainAndExport(t, "libffm", export.FP32)
	reg := prometheus.NewPedanticRegistry()
	s, err := serve.New(serve.Options{Store: store, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer checkServeMetrics(t, reg)
	c := grpcClient(t, s)
	req := serve.Request{User: "0:u1", Candidates: []string{"1:a 2:b", "1:c", "3:d:0.5"}}
	want, err := s.Predict(&req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Predict(context.Background(), &servepb.PredictRequest{User: req.User, Candidates: req.Candidates})
	if err != nil || got.Version != want.Version || !slices.Equal(got.Scores, want.Scores) {
		t.Fatalf("gRPC: %v, %v; Predict: %+v", got, err, want)
	}
	if _, err := c.Predict(context.Background(), &servepb.PredictRequest{Candidates: []string{"x"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a bad request over gRPC: %v, want INVALID_ARGUMENT", err)
	}
}

// checkServeMetrics: TestGRPCAnswersAsHTTP's two gRPC requests (one
// scored, one refused) are counted, and the model served is reported.
func checkServeMetrics(t *testing.T, reg *prometheus.Registry) {
	want := `
# HELP xps_serve_requests_total Prediction requests, by API (http, grpc) and outcome (ok, bad_request, not_ready, error, overloaded, too_large).
# TYPE xps_serve_requests_total counter
xps_serve_requests_total{api="grpc",outcome="bad_request"} 1
xps_serve_requests_total{api="grpc",outcome="ok"} 1
`
	if err := promtest.GatherAndCompare(reg, strings.NewReader(want), "xps_serve_requests_total"); err != nil {
		t.Error(err)
	}
	if n, err := promtest.GatherAndCount(reg, "xps_serve_model_export", "xps_serve_request_seconds", "xps_serve_model_rows"); err != nil || n < 3 {
		t.Errorf("%d series of the model and latency, %v; want the export, the gRPC latency and rows", n, err)
	}
}

// grpcClient serves s's gRPC service (a Server's or a Set's) on a
// loopback port and returns a client of it; both stop when the test ends.
func grpcClient(t *testing.T, s interface{ RegisterGRPC(*grpc.Server) }) servepb.PredictorClient {
	t.Helper()
	gs := grpc.NewServer()
	s.RegisterGRPC(gs)
	return dialGRPC(t, gs)
}

// dialGRPC serves gs on a loopback port and returns a client of its
// prediction service; both stop when the test ends.
func dialGRPC(t *testing.T, gs *grpc.Server) servepb.PredictorClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return servepb.NewPredictorClient(conn)
}
