package job

import (
	"encoding/json"
	"io"
	"sync"
)

// Events writes a job's machine-readable stream (the worker's -events):
// JSON lines, one object an event, whose "event" names it:
//
//	{"event": "start", "status_page": URL,          the job began: its status page ("": none),
//	 "etcd": ENDPOINTS, "cluster": NAME}            its cluster's etcd (comma-separated) and name
//	{"event": "progress", "progress": Progress}      each progress report (Progress's JSON)
//	{"event": "end", "result": RESULT, "error": MSG}  the job ended: its summary (the -json
//	                                                 object, null when there is none) and,
//	                                                 when it failed or was stopped, why
//
// A reader takes the lines it knows and skips the others: events may be
// added, never changed. The first error writing is kept (Err) and the
// events after it dropped: a reader gone does not stop the job.
type Events struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewEvents returns the event stream written to w.
func NewEvents(w io.Writer) *Events { return &Events{w: w} }

// Started is what the start event says of a job.
type Started struct {
	// StatusPage is the status page's URL, "" without one.
	StatusPage string `json:"status_page"`
	// Etcd is the cluster's etcd endpoints, comma-separated, and Cluster
	// its name (the scheduler's -etcd and -cluster reach it).
	Etcd    string `json:"etcd"`
	Cluster string `json:"cluster"`
}

// Start writes the start event.
func (e *Events) Start(s Started) {
	e.write(struct {
		Event string `json:"event"`
		Started
	}{"start", s})
}

// Progress writes a progress event: an Options.OnProgress.
func (e *Events) Progress(p Progress) {
	e.write(struct {
		Event    string   `json:"event"`
		Progress Progress `json:"progress"`
	}{"progress", p})
}

// End writes the end event of a job whose summary is result (nil: none)
// and whose error is err.
func (e *Events) End(result any, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	e.write(struct {
		Event  string `json:"event"`
		Result any    `json:"result"`
		Error  string `json:"error,omitempty"`
	}{"end", result, msg})
}

// Err returns the first error writing the stream.
func (e *Events) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *Events) write(v any) {
	b, err := json.Marshal(v)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	if err == nil {
		_, err = e.w.Write(append(b, '\n'))
	}
	e.err = err
}
