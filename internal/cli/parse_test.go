package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// manyFlags is a flag set with a usage as long as a main's.
func manyFlags(handling flag.ErrorHandling) (*flag.FlagSet, *bytes.Buffer) {
	fs := flag.NewFlagSet("worker", handling)
	out := new(bytes.Buffer)
	fs.SetOutput(out)
	var p Proc
	p.Bind(fs, "info")
	var prof Profiles
	prof.Bind(fs)
	fs.Int("n", 1, "a count")
	return fs, out
}

// TestParseBadFlag: an unknown flag, a bad value or a missing one is an
// error matching ErrUsage whose text names the problem; Parse prints
// nothing, and Report prints that line and the hint and gives status 2,
// without the usage (another error: its line alone, status 1). -h and
// -help print the whole usage.
func TestParseBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nosuchflag"}, "worker: flag provided but not defined: -nosuchflag"},
		{[]string{"-n", "many"}, `worker: invalid value "many" for flag -n: parse error`},
		{[]string{"-log-level"}, "worker: flag needs an argument: -log-level"},
		{[]string{"-n", "2", "oops"}, `worker: unexpected argument "oops": worker takes flags only`},
	} {
		fs, out := manyFlags(flag.ContinueOnError)
		err := Parse(fs, "worker", tc.args)
		if !errors.Is(err, ErrUsage) || out.Len() != 0 {
			t.Errorf("Parse(%q) = %v, printed %q; want an ErrUsage and nothing printed", tc.args, err, out)
			continue
		}
		if code := Report(out, "worker", err); code != 2 || out.String() != tc.want+"\nrun `worker -h` for every flag\n" {
			t.Errorf("Report of Parse(%q): status %d, printed\n%s\nwant status 2 and %q and the hint", tc.args, code, out, tc.want)
		}
	}
	var other bytes.Buffer
	if code := Report(&other, "worker", errors.New("worker: no data")); code != 1 || other.String() != "worker: no data\n" {
		t.Errorf("Report of another error: status %d, printed %q; want 1 and the error alone", code, other.String())
	}
	fs, _ := manyFlags(flag.ContinueOnError)
	if err := Parse(fs, "worker", []string{"-n", "oops"}); !errors.Is(err, ErrUsage) || errors.Is(err, ErrStrayArgs) {
		t.Errorf("bad value: %v, want ErrUsage and not ErrStrayArgs", err)
	}
	if err := Parse(fs, "worker", []string{"stray"}); !errors.Is(err, ErrUsage) || !errors.Is(err, ErrStrayArgs) {
		t.Errorf("stray argument: %v, want ErrUsage and ErrStrayArgs", err)
	}
	for _, h := range []string{"-h", "-help", "--help"} {
		fs, out := manyFlags(flag.ContinueOnError)
		if err := Parse(fs, "worker", []string{h}); !errors.Is(err, flag.ErrHelp) ||
			!strings.HasPrefix(out.String(), "Usage: worker [flags]\n") || !strings.Contains(out.String(), "  -tls-key string\n") {
			t.Errorf("Parse(%s) = %v, printed\n%s\nwant flag.ErrHelp and the whole usage", h, err, out)
		}
	}
	fs, out := manyFlags(flag.ContinueOnError)
	if err := Parse(fs, "worker", []string{"-n", "3"}); err != nil || out.Len() != 0 || fs.Lookup("n").Value.String() != "3" {
		t.Errorf("good flags: %v, printed %q, -n %v", err, out, fs.Lookup("n").Value)
	}
	if fs.ErrorHandling() != flag.ContinueOnError || fs.Output() != out {
		t.Error("Parse changed the flag set's error handling or output")
	}
}

// TestParseMain: what ParseCommandLine does on a flag set made as
// flag.CommandLine is (flag.ExitOnError): -h prints the usage and exits
// 0; a bad command line prints two lines and exits 2; good flags go on.
func TestParseMain(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		code  int
		exit  bool
		lines int // printed; -1: the whole usage
	}{
		{nil, 0, false, 0},
		{[]string{"-n", "2"}, 0, false, 0},
		{[]string{"-nosuchflag"}, 2, true, 2},
		{[]string{"-n", "x"}, 2, true, 2},
		{[]string{"x"}, 2, true, 2},
		{[]string{"-h"}, 0, true, -1},
		{[]string{"-help"}, 0, true, -1},
		{[]string{"-version"}, 0, true, 1},
		{[]string{"--version"}, 0, true, 1},
	} {
		fs, out := manyFlags(flag.ExitOnError)
		code, exit := parseMain(fs, "worker", tc.args)
		lines := strings.Count(out.String(), "\n")
		if tc.lines < 0 && strings.HasPrefix(out.String(), "Usage: worker") && lines > 10 {
			lines = -1
		}
		if code != tc.code || exit != tc.exit || lines != tc.lines {
			t.Errorf("parseMain(%q) = %d, %v, printed %d lines:\n%s\nwant %d, %v, %d lines (-1: the usage)",
				tc.args, code, exit, lines, out, tc.code, tc.exit, tc.lines)
		}
		if len(tc.args) == 1 && strings.HasSuffix(tc.args[0], "-version") && !strings.HasPrefix(out.String(), "xps worker ") {
			t.Errorf("parseMain(%q) printed %q, want the VersionLine", tc.args, out)
		}
		if fs.ErrorHandling() != flag.ExitOnError {
			t.Errorf("parseMain(%q) left the error handling %v", tc.args, fs.ErrorHandling())
		}
	}
}

// TestParseCommandLineExits runs ParseCommandLine in a child process
// (this test binary again) as `worker -nosuchflag`: it exits 2 having
// printed the problem and the hint, not the usage.
func TestParseCommandLineExits(t *testing.T) {
	if os.Getenv("XPS_CLI_PARSE_CHILD") == "1" {
		os.Args = []string{"worker", "-nosuchflag"}
		ParseCommandLine("worker")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestParseCommandLineExits$")
	cmd.Env = append(os.Environ(), "XPS_CLI_PARSE_CHILD=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("worker -nosuchflag: %v, want exit status 2:\n%s", err, out)
	}
	if want := "worker: flag provided but not defined: -nosuchflag\nrun `worker -h` for every flag\n"; string(out) != want {
		t.Fatalf("worker -nosuchflag printed (%d lines)\n%s\nwant\n%s", strings.Count(string(out), "\n"), out, want)
	}
}
