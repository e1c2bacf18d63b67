package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// ErrStrayArgs is wrapped by Parse's error for positional arguments: no
// command of xps takes one unless its usage names them, so a stray word
// (a flag's value left after a space in a quoted list, a flag without its
// dash) is an error rather than ignored.
var ErrStrayArgs = errors.New("unexpected argument")

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

// Parse parses args into fs with Usage(fs, prog, "") as its usage; a
// positional argument is an error wrapping ErrStrayArgs.
func Parse(fs *flag.FlagSet, prog string, args []string) error {
	fs.Usage = Usage(fs, prog, "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return strayArgs(fs, prog)
}

func strayArgs(fs *flag.FlagSet, prog string) error {
	if fs.NArg() == 0 {
		return nil
	}
	return fmt.Errorf("%w %q: %s takes flags only (-h lists them)", ErrStrayArgs, fs.Arg(0), prog)
}

// ParseCommandLine parses os.Args[1:] into flag.CommandLine as Parse does,
// for a main: -h prints the usage and exits 0; a bad flag or a positional
// argument prints the problem and exits with status 2.
func ParseCommandLine(prog string) {
	fs := flag.CommandLine
	fs.Usage = Usage(fs, prog, "")
	fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError
	if err := strayArgs(fs, prog); err != nil {
		fmt.Fprintln(fs.Output(), FatalLine(prog, err))
		os.Exit(2)
	}
}
