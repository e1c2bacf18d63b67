package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUsage: every flag shows its default, zero ones too; a flag that
// names its own default keeps it; a func flag shows none.
func TestUsage(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.String("s", "", "a string")
	fs.Bool("b", false, "a bool")
	fs.Int("n", 0, "a count")
	fs.Duration("d", 5*time.Second, "a duration")
	fs.String("a", "", "an `address`")
	fs.Func("set", "a func flag", func(string) error { return nil })
	fs.Func("batch", "sets x (default 256)", func(string) error { return nil })
	Usage(fs, "x", "FILE...")()
	for _, want := range []string{"Usage: x [flags] FILE...\n", "  -s string\n    \ta string (default \"\")\n", "  -b\n    \ta bool (default false)\n",
		"  -n int\n    \ta count (default 0)\n", "  -d duration\n    \ta duration (default 5s)\n", "  -a address\n    \tan address (default \"\")\n",
		"  -set value\n    \ta func flag (default none)\n", "  -batch value\n    \tsets x (default 256)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, out.String())
		}
	}
}

// TestParseStray: a positional argument is an error naming it.
func TestParseStray(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	fs.Bool("v", false, "")
	if err := Parse(fs, "x", []string{"-v"}); err != nil {
		t.Fatal(err)
	}
	err := Parse(fs, "x", []string{"-v", "oops", "more"})
	if !errors.Is(err, ErrStrayArgs) || !strings.Contains(err.Error(), `"oops"`) {
		t.Fatalf("stray argument: %v", err)
	}
}

// TestCause: after a signal, an error is the signal's one line, with the
// shell's exit status; without one, the error itself.
func TestCause(t *testing.T) {
	ctx, stop := SignalContext()
	defer stop()
	failed := fmt.Errorf("read: %w", context.Canceled)
	if err := Cause(ctx, failed); err != failed {
		t.Fatalf("no signal: %v", err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	err := Cause(ctx, failed)
	var s *Signal
	if !errors.As(err, &s) || err.Error() != "stopped by SIGINT (Ctrl-C)" || s.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v", err)
	}
	if Cause(ctx, nil) != nil {
		t.Fatal("Cause of no error is an error")
	}
}
