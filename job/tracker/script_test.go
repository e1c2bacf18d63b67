package tracker

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdlgo/xps/job/checkpoint"
	"github.com/xdlgo/xps/reader"
)

// The scripts under testdata/ drive a Tracker with one event per line. A
// block is one or more lines, a line "----", and the expected output:
// every action, one per line (or "error: ..."). A blank line ends the
// block; lines starting with "#" between blocks are comments. Run with
// -rewrite to regenerate the expected output.
//
//	new [epochs=N] [commits] [commit-every=DUR] [progress-every=DUR]
//	    [eval-every=N] [evaluate] [evaluate-on-stop] [sync] [barrier]
//	    [start-epoch=N] [start-done] [start-batch=N] [start-applied=N]
//	    [validate] [higher] [patience=N] [keep-best] [final]
//	    [start-best=VALUE@WHEN+SINCE] (WHEN with _ for spaces)
//	                           a new Tracker
//	start DUR                  Started at the script's epoch plus DUR
//	trained DUR samples=N [digest=D] [ends=FILE@OFF#IDX,...] [pause]
//	tick DUR | idle DUR | redealt DUR | ended DUR | stopped DUR
//	validated DUR value=V      Validated

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the testdata scripts")

var scriptEpoch = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

func runScript(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var tr *Tracker
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		var input []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
		}
		var want []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		var got []string
		for _, in := range input {
			got = append(got, step(t, &tr, in)...)
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: after\n%s\ngot\n%s\nwant\n%s", path, strings.Join(input, "\n"),
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out.WriteString(strings.Join(input, "\n") + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if i < len(lines)-1 {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// step runs one script line and returns its output lines.
func step(t *testing.T, tr **Tracker, line string) []string {
	words := strings.Fields(line)
	args := map[string]string{}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		args[k] = v
	}
	if words[0] == "new" {
		*tr = New(newOptions(t, args))
		return nil
	}
	if *tr == nil {
		t.Fatalf("%q before new", line)
	}
	now := scriptEpoch.Add(dur(t, words[1]))
	var ev Event
	switch words[0] {
	case "start":
		ev = Started{Now: now}
	case "trained":
		ev = BatchTrained{Now: now, Samples: num(t, args["samples"]), Digest: uint64(num(t, args["digest"])),
			Ends: positions(t, args["ends"]), PauseRequested: has(args, "pause")}
	case "tick":
		ev = Tick{Now: now, PauseRequested: has(args, "pause")}
	case "idle":
		ev = Idle{Now: now}
	case "redealt":
		ev = Redealt{Now: now}
	case "ended":
		ev = EpochEnded{Now: now}
	case "stopped":
		ev = Stopped{Now: now}
	case "validated":
		v, err := strconv.ParseFloat(args["value"], 64)
		if err != nil {
			t.Fatal(err)
		}
		ev = Validated{Now: now, Value: v}
	default:
		t.Fatalf("unknown command %q", line)
	}
	acts, err := (*tr).Step(ev)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	out := make([]string, len(acts))
	for i, a := range acts {
		out[i] = format(a)
	}
	return out
}

func newOptions(t *testing.T, args map[string]string) Options {
	o := Options{Epochs: 1, Commits: has(args, "commits"), Evaluate: has(args, "evaluate"), Sync: has(args, "sync"),
		Barrier: has(args, "barrier"), EvaluateOnStop: has(args, "evaluate-on-stop")}
	if v, ok := args["epochs"]; ok {
		o.Epochs = num(t, v)
	}
	o.CommitEvery, o.ProgressEvery = dur(t, args["commit-every"]), dur(t, args["progress-every"])
	o.EvalEvery = num(t, args["eval-every"])
	o.Start = checkpoint.Checkpoint{Epoch: num(t, args["start-epoch"]), EpochDone: has(args, "start-done"),
		Batch: num(t, args["start-batch"]), Applied: int64(num(t, args["start-applied"]))}
	o.Validate, o.Higher, o.KeepBest, o.Final = has(args, "validate"), has(args, "higher"), has(args, "keep-best"), has(args, "final")
	o.Patience = num(t, args["patience"])
	if v, ok := args["start-best"]; ok { // VALUE@WHEN+SINCE
		b := &checkpoint.Best{}
		vw, since, _ := strings.Cut(v, "+")
		val, w, _ := strings.Cut(vw, "@")
		b.Value, _ = strconv.ParseFloat(val, 64)
		b.When, b.Since = strings.ReplaceAll(w, "_", " "), num(t, since)
		o.Start.Best = b
	}
	return o
}

func has(args map[string]string, k string) bool { _, ok := args[k]; return ok }

func num(t *testing.T, s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func dur(t *testing.T, s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// positions parses FILE@OFF#IDX,...
func positions(t *testing.T, s string) []reader.Position {
	if s == "" {
		return nil
	}
	var out []reader.Position
	for _, p := range strings.Split(s, ",") {
		at := strings.LastIndexByte(p, '@') // a window's name holds one too
		file, rest := p[:at], p[at+1:]
		off, idx, _ := strings.Cut(rest, "#")
		out = append(out, reader.Position{File: file, Offset: int64(num(t, off)), Index: num(t, idx)})
	}
	return out
}

func format(a Action) string {
	switch a := a.(type) {
	case Open:
		return fmt.Sprintf("open epoch %d batch %d", a.Epoch, a.Batch)
	case Commit:
		return "commit " + formatCheckpoint(a.Checkpoint)
	case Pause:
		if a.Checkpoint == nil {
			return "pause"
		}
		return "pause " + formatCheckpoint(*a.Checkpoint)
	case Evaluate:
		if a.Final {
			return fmt.Sprintf("evaluate %q final", a.When)
		}
		return fmt.Sprintf("evaluate %q", a.When)
	case Reopen:
		return "reopen"
	case Progress:
		return "progress"
	case LeaveRound:
		return "leave-round " + formatCheckpoint(a.Checkpoint)
	case Drain:
		return "drain"
	case Barrier:
		return "barrier"
	case Done:
		return "done"
	case Validate:
		return fmt.Sprintf("validate %q", a.When)
	case Pin:
		return fmt.Sprintf("pin %q %s", a.When, formatCheckpoint(a.Checkpoint))
	case Rollback:
		return fmt.Sprintf("rollback: %s", a.Reason)
	}
	return fmt.Sprintf("unknown action %T", a)
}

func formatCheckpoint(c checkpoint.Checkpoint) string {
	s := fmt.Sprintf("epoch %d", c.Epoch)
	if c.EpochDone {
		s += " done"
	}
	s += fmt.Sprintf(" batch %d applied %d batches %d digest %d", c.Batch, c.Applied, c.Batches, c.Digest)
	if len(c.Positions) > 0 {
		s += fmt.Sprintf(" at %v", c.Positions)
	}
	if b := c.Best; b != nil {
		s += fmt.Sprintf(" best %g at %q since %d", b.Value, b.When, b.Since)
	}
	return s
}
