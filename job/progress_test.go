package job

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/tests/testutil"
)

// TestProgressJSON checks that a report with undefined figures encodes
// (NaN as null) and decodes back, null as NaN.
func TestProgressJSON(t *testing.T) {
	in := Progress{Worker: "worker-0", Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Epoch: 1, Epochs: 2,
		Batches: 7, Samples: 700, SamplesPerSecond: 1234.5, Loss: 0.5, AUC: math.NaN(), RunningAUC: 0.7,
		RunningLogLoss: math.Inf(1), TestAUC: math.NaN(), TestLogLoss: math.NaN(), Lag: -1, Rows: 9}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"auc":null`, `"test_auc":null`, `"running_logloss":null`, `"samples_per_second":1234.5`,
		`"worker":"worker-0"`, `"lag":-1`, `"rows":9`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not hold %s", b, want)
		}
	}
	var out Progress
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(out.AUC) || !math.IsNaN(out.TestAUC) || !math.IsNaN(out.RunningLogLoss) {
		t.Fatalf("undefined figures decoded as %v, %v, %v; want NaN", out.AUC, out.TestAUC, out.RunningLogLoss)
	}
	out.AUC, out.TestAUC, out.TestLogLoss, out.RunningLogLoss = in.AUC, in.TestAUC, in.TestLogLoss, in.RunningLogLoss
	if b2, _ := json.Marshal(out); string(b2) != string(b) {
		t.Fatalf("round trip:\n%s\n%s", b, b2)
	}
}

// TestPublisher offers reports faster than etcd takes them: offering never
// waits, and the report in etcd after close is the last one offered.
func TestPublisher(t *testing.T) {
	srv := testutil.StartEtcd(t)
	cli := testutil.EtcdClient(t, srv.Endpoints())
	ctx := testutil.Ctx(t, 30*time.Second)
	const prefix = "/xps/publisher-test"
	reg, err := membership.Keep(ctx, cli, prefix, membership.Member{Kind: membership.KindWorker, ID: "worker-0"}, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	conn := testutil.Conn(cli, prefix)
	p := startPublisher(conn, reg, nil)
	var seen int64
	on := p.wrap(func(r Progress) { seen = r.Samples })
	start := time.Now()
	for i := int64(1); i <= 1000; i++ {
		on(Progress{Worker: "worker-0", Samples: i, AUC: math.NaN()})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("1000 offers took %v", d)
	}
	p.close()
	if seen != 1000 {
		t.Fatalf("the wrapped OnProgress saw %d, want 1000", seen)
	}
	resp, err := cli.Get(ctx, controlplane.ProgressKey(prefix, "worker-0"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the published report: %v, %v", resp, err)
	}
	var got Progress
	if err := json.Unmarshal(resp.Kvs[0].Value, &got); err != nil || got.Samples != 1000 || !math.IsNaN(got.AUC) {
		t.Fatalf("published %s (%v), want the last report", resp.Kvs[0].Value, err)
	}
	if resp.Kvs[0].Lease != int64(reg.Current().Lease()) {
		t.Fatalf("the report is under lease %x, the worker's is %x", resp.Kvs[0].Lease, reg.Current().Lease())
	}
}
