package job

import (
	"encoding/json"
	"io"
	"sync"
)

// Events writes a job's machine-readable stream (the worker's -events):
// JSON lines, one object an event, whose "event" names it:
//
//	{"event": "start", "status_page": URL}          the job began ("" without a status page)
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

// Start writes the start event; statusPage is the status page's URL ("":
// none).
func (e *Events) Start(statusPage string) {
	e.write(struct {
		Event      string `json:"event"`
		StatusPage string `json:"status_page"`
	}{"start", statusPage})
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
