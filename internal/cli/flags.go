package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// ErrStrayArgs is wrapped by Parse's error for positional arguments: no
// command of xps takes one unless its usage names them, so a stray word
// (a flag's value left after a space in a quoted list, a flag without its
// dash) is an error rather than ignored.
var ErrStrayArgs = errors.New("unexpected argument")

// ErrUsage is matched (errors.Is) by Parse's error for a bad command
// line: an unknown flag, a bad flag value, a missing flag value or a
// positional argument. The error's text is the problem alone ("flag
// provided but not defined: -x"); Fatal and Report print it with a hint
// (Hint) and exit with status 2, as package flag does, without the full
// usage.
var ErrUsage = errors.New("cli: bad command line")

// usageError is Parse's error for a bad command line: its text is err's,
// and it matches both err and ErrUsage.
type usageError struct{ err error }

func (e *usageError) Error() string   { return e.err.Error() }
func (e *usageError) Unwrap() []error { return []error{e.err, ErrUsage} }

// Hint is the line printed after a bad command line: where the flags are
// listed ("run `worker -h` for every flag").
func Hint(prog string) string { return "run `" + prog + " -h` for every flag" }

// Usage returns a usage function for fs: "Usage: prog [flags] synopsis",
// then every flag with its usage and its default, the zero ones too ("",
// 0, false), which flag.PrintDefaults leaves out. A flag whose usage
// already says "(default ...)" (the config's short flags, whose default
// is the config's) keeps its own; one that holds no value of its own (a
// func flag such as -set) shows "(default none)".
func Usage(fs *flag.FlagSet, prog, synopsis string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", strings.TrimSpace(prog+" [flags] "+synopsis))
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			line := "  -" + f.Name
			if name != "" {
				line += " " + name
			}
			fmt.Fprintf(w, "%s\n    \t%s%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"), defaultNote(f, name, usage))
		})
	}
}

// defaultNote is the " (default ...)" Usage appends to a flag's usage.
func defaultNote(f *flag.Flag, typ, usage string) string {
	switch {
	case strings.Contains(usage, "(default "):
		return ""
	case typ == "value" && f.DefValue == "":
		return " (default none)"
	case typ == "string" || f.DefValue == "":
		return fmt.Sprintf(" (default %q)", f.DefValue)
	}
	return " (default " + f.DefValue + ")"
}

// Parse parses args into fs and sets Usage(fs, prog, "") as fs's usage.
// A lone -version prints VersionLine(prog) and is taken as -h (flag.ErrHelp).
// -h or -help prints that usage to fs.Output() and returns flag.ErrHelp.
// A bad command line (an unknown flag, a bad or missing flag value, a
// positional argument, the last wrapping ErrStrayArgs) prints nothing and
// returns an error matching ErrUsage, for the caller to report (Fatal,
// Report): one line and a hint, not the hundred lines of usage package
// flag prints. An fs made with flag.ExitOnError exits instead of
// returning an error (status 0 after -h, else Report's 2); one made with
// flag.PanicOnError panics with it.
func Parse(fs *flag.FlagSet, prog string, args []string) error {
	err := parse(fs, prog, args)
	if err == nil {
		return nil
	}
	switch fs.ErrorHandling() {
	case flag.ExitOnError:
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(Report(fs.Output(), prog, err))
	case flag.PanicOnError:
		panic(err)
	}
	return err
}

// parse is Parse returning every error: package flag is kept from
// printing (its message goes to the returned error, its usage only after
// -h) and from exiting.
func parse(fs *flag.FlagSet, prog string, args []string) error {
	if len(args) == 1 && (args[0] == "-version" || args[0] == "--version") {
		fmt.Fprintln(fs.Output(), VersionLine(prog))
		return flag.ErrHelp // printed; the main exits 0
	}
	usage := Usage(fs, prog, "")
	name, handling, out := fs.Name(), fs.ErrorHandling(), fs.Output()
	fs.Init(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Init(name, handling)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return &usageError{err}
	case fs.NArg() > 0:
		return &usageError{fmt.Errorf("%w %q: %s takes flags only", ErrStrayArgs, fs.Arg(0), prog)}
	}
	return nil
}

// ParseCommandLine parses os.Args[1:] into flag.CommandLine as Parse does,
// for a main: -h prints the usage and exits 0, -version (alone) the
// VersionLine; a bad command line prints the problem and Hint and exits
// with status 2.
func ParseCommandLine(prog string) {
	if code, exit := parseMain(flag.CommandLine, prog, os.Args[1:]); exit {
		os.Exit(code)
	}
}

// parseMain is ParseCommandLine on fs and args: whether the main is to
// exit, and with which status, after printing what it prints to
// fs.Output().
func parseMain(fs *flag.FlagSet, prog string, args []string) (code int, exit bool) {
	switch err := parse(fs, prog, args); {
	case err == nil:
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		return 0, true
	default:
		return Report(fs.Output(), prog, err), true
	}
}

// VersionLine is what -version prints: "xps PROG REVISION GOVERSION", the
// revision of the commit the binary was built from (with "+modified"
// when the tree had changes), or "(devel)" when the build recorded none.
// Other programs (the Python package) tell xps's binaries by it.
func VersionLine(prog string) string {
	rev, goVersion := "(devel)", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && rev != "(devel)" {
			rev += "+modified"
		}
	}
	return fmt.Sprintf("xps %s %s %s", prog, rev, goVersion)
}
