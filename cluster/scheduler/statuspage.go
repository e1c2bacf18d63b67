package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/xdlgo/xps/cluster/controlplane"
	"github.com/xdlgo/xps/cluster/membership"
)

// statusTimeout bounds the etcd reads of one status page.
const statusTimeout = 2 * time.Second

// statusData is what the status page shows, gathered at Now.
type statusData struct {
	Now    time.Time `json:"now"`
	Prefix string    `json:"prefix"`
	Job    string    `json:"job,omitempty"`
	// Self is this scheduler's id; Leading whether it leads the cluster;
	// Leader the leader's id and LeaderAddr its address ("" when unknown).
	Self       string `json:"self"`
	Leading    bool   `json:"leading"`
	Leader     string `json:"leader,omitempty"`
	LeaderAddr string `json:"leader_addr,omitempty"`
	// State and Version are the cluster's state: this scheduler's when it
	// leads, else the one the leader recorded (at StateTime).
	State     string    `json:"state"`
	Version   uint64    `json:"version"`
	StateTime time.Time `json:"state_time"`
	// Members are the registered members and their leases.
	Members []controlplane.MemberStatus `json:"members"`
	// Workers are the progress reports of the workers seen, oldest first.
	Workers   []workerHistory               `json:"workers"`
	Snapshots []controlplane.SnapshotResult `json:"snapshots"`
	Exports   []controlplane.ExportResult   `json:"exports"`
	// Problems are what could not be read.
	Problems []string `json:"problems,omitempty"`
}

// statusData gathers the page's figures: the board, and from etcd the
// members and their leases, the leader, the job and (on a standby) the
// state the leader recorded.
func (s *Scheduler) statusData(ctx context.Context) *statusData {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	v := s.board.view()
	d := &statusData{Now: time.Now(), Prefix: s.opts.Prefix, Self: s.opts.ID, Leading: s.Leader(),
		Workers: v.Workers, Snapshots: v.Snapshots, Exports: v.Exports}
	problem := func(what string, err error) { d.Problems = append(d.Problems, fmt.Sprintf("%s: %v", what, err)) }
	var err error
	if d.Members, err = s.conn.MemberStatuses(ctx); err != nil {
		problem("members", err)
	}
	if r, ok, err := s.conn.GetJob(ctx); err != nil {
		problem("job", err)
	} else if ok {
		d.Job = r.ID
	}
	if d.Leading {
		d.Leader, d.LeaderAddr = s.opts.ID, s.opts.Addr
		s.mu.Lock()
		st, since := s.mu.state, s.mu.since
		s.mu.Unlock()
		d.State, d.Version, d.StateTime = st.Phase.String(), st.Version, since
		return d
	}
	if id, ok, err := s.conn.Leader(ctx); err != nil {
		problem("leader", err)
	} else if ok {
		d.Leader = id
		for _, m := range d.Members {
			if m.Kind == membership.KindScheduler && m.ID == id {
				d.LeaderAddr = m.Addr
			}
		}
	}
	if st, ok, err := s.conn.GetClusterState(ctx); err != nil {
		problem("cluster state", err)
	} else if ok {
		d.State, d.Version, d.StateTime = st.Phase, st.Version, st.Time
	} else {
		d.State = "unknown (no state recorded)"
	}
	return d
}

// StatusHandler serves the status page: GET / the HTML page (inline SVG
// curves, no script; it reloads itself every 5 s), GET /status.json the
// same figures as JSON. Register it for both paths (cli.Proc.ServeStatus
// does).
func (s *Scheduler) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.statusData(r.Context())
		if strings.HasSuffix(r.URL.Path, ".json") {
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.Encode(d) //nolint:errcheck // the client went away
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := renderStatus(w, d); err != nil {
			s.log.Warn("status page", "err", err)
		}
	})
}

// renderStatus writes the page of d.
func renderStatus(w io.Writer, d *statusData) error {
	p := page{statusData: d, Charts: statusCharts(d), Lag: -1}
	live := map[string]bool{}
	for _, m := range d.Members {
		if m.Kind == membership.KindWorker {
			live[m.ID] = true
		}
	}
	for _, h := range d.Workers {
		row := workerRow(h, d.Now, live[h.Name])
		p.Rows = append(p.Rows, row)
		if row.Live && row.lag >= 0 {
			p.Lag = max(p.Lag, 0) + row.lag
		}
	}
	return pageTemplate.Execute(w, &p)
}

// page is the template's data: d, and what is computed from it.
type page struct {
	*statusData
	Rows   []workerLine
	Charts []chart
	// Lag is the Kafka lag summed over the live workers' latest reports,
	// -1 when none reads Kafka.
	Lag int64
}

// workerLine is one worker's row: its newest training report's figures.
type workerLine struct {
	Name, Epoch, Last                 string
	Live                              bool
	Samples                           int64
	Rate, Loss, AUC, Running, TestAUC string
	Lag, Rows                         string
	lag                               int64
}

// workerRow makes h's row: the figures of its newest training report (an
// evaluation's report has none), the test AUC of its newest report.
func workerRow(h workerHistory, now time.Time, live bool) workerLine {
	row := workerLine{Name: h.Name, Live: live, lag: -1, Lag: "–", Rows: "–"}
	if len(h.Reports) == 0 {
		return row
	}
	last := h.Reports[len(h.Reports)-1]
	row.Last, row.TestAUC = ago(now, last.Time), num(last.TestAUC, 4)
	tr := last
	for i := len(h.Reports) - 1; i >= 0; i-- {
		if defined(h.Reports[i].SamplesPerSecond) {
			tr = h.Reports[i]
			break
		}
	}
	row.Epoch = fmt.Sprintf("%d/%d", tr.Epoch, tr.Epochs)
	row.Samples, row.Rate, row.Loss = tr.Samples, num(tr.SamplesPerSecond, 0), num(tr.Loss, 4)
	row.AUC, row.Running = num(tr.AUC, 4), num(tr.RunningAUC, 4)
	if tr.Lag >= 0 {
		row.lag, row.Lag = tr.Lag, fmt.Sprint(tr.Lag)
	}
	if tr.Rows >= 0 {
		row.Rows = fmt.Sprint(tr.Rows)
	}
	return row
}

func defined(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// num writes v with the given decimals, "–" when undefined.
func num(v float64, decimals int) string {
	if !defined(v) {
		return "–"
	}
	return fmt.Sprintf("%.*f", decimals, v)
}

// ago writes how long before now t was, to the second.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// heartbeat describes a member's lease: the time since its last
// keep-alive, and the TTL left.
func heartbeat(m controlplane.MemberStatus) string {
	if m.Left < 0 {
		return "lease expired or unknown"
	}
	return fmt.Sprintf("about %v ago (lease %v of %v left)", m.TTL-m.Left, m.Left, m.TTL)
}
