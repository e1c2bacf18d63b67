package filters

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt")

// The admission scripts under testdata/ drive a Filter with one command
// per line. A block is comment lines ("#"), one or more command lines, a
// line "----" and the expected output; a blank line ends it. Run with
// -rewrite to regenerate the expected output.
//
//	new [kind=K] [p=P] [n=N] [fp=RATE] [bytes=B] [generations=G] [partitions=P]
//	                  a new Filter (partitions default to 1); prints its sizing
//	admit P:ID...     one sighting each; prints the decision and the count
//	                  credited before it
//	count P:ID...     prints the count credited, recording nothing
//	fill P FROM TO    sights the IDs FROM..TO-1 of partition P once each;
//	                  prints how many were admitted
//	show              prints the generations of every partition with state
//	reload            moves every partition's state into a new Filter of the
//	                  same spec (a snapshot and a restore)
//	drop P            drops partition P's state
type scriptBlock struct {
	pre, input, want string
	line             int
}

func parseScript(src string) (blocks []scriptBlock, trailer string, err error) {
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	var b scriptBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case b.input == "" && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#")):
			b.pre += l + "\n"
		case l == "----":
			j := i + 1
			for j < len(lines) && lines[j] != "" {
				j++
			}
			b.want = strings.Join(lines[i+1:j], "\n")
			blocks = append(blocks, b)
			b, i = scriptBlock{}, j-1
		default:
			if b.input == "" {
				b.line = i + 1
			}
			b.input += l + "\n"
		}
	}
	if b.input != "" {
		return nil, "", fmt.Errorf("line %d: a block without ----", b.line)
	}
	return blocks, b.pre, nil
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts under testdata/: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			blocks, trailer, err := parseScript(string(src))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			var r scriptRunner
			var out strings.Builder
			for _, b := range blocks {
				got := r.run(b.input)
				out.WriteString(b.pre + b.input + "----\n")
				if got != "" {
					out.WriteString(got + "\n")
				}
				if !*rewrite && got != b.want {
					t.Errorf("%s:%d:\n%s----\ngot:\n%s\nwant:\n%s", file, b.line, b.input, got, b.want)
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(out.String()+trailer), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type scriptRunner struct {
	f          *Filter
	spec       Spec
	partitions int
}

// run runs the command lines of a block and returns their output.
func (r *scriptRunner) run(input string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(input, "\n"), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if r.f == nil && fields[0] != "new" {
			out = append(out, "error: no filter: begin with new")
			continue
		}
		lines, err := r.command(fields[0], fields[1:])
		if err != nil {
			lines = append(lines, "error: "+err.Error())
		}
		out = append(out, lines...)
	}
	return strings.Join(out, "\n")
}

func (r *scriptRunner) command(verb string, args []string) ([]string, error) {
	switch verb {
	case "new":
		return r.newFilter(args)
	case "admit", "count":
		var out []string
		for _, a := range args {
			p, id, err := parseSighting(a)
			if err != nil {
				return out, err
			}
			c := r.f.Count(p, id)
			if verb == "count" {
				out = append(out, fmt.Sprintf("%s credited %d", a, c))
				continue
			}
			out = append(out, fmt.Sprintf("%s %s, credited %d", a, map[bool]string{true: "yes", false: "no"}[r.f.Admit(p, id)], c))
		}
		return out, nil
	case "fill":
		n, err := ints(args, 3)
		if err != nil {
			return nil, err
		}
		admitted := 0
		for id := n[1]; id < n[2]; id++ {
			admitted += b2i(r.f.Admit(uint32(n[0]), uint64(id)))
		}
		return []string{fmt.Sprintf("%d sightings, %d admitted", max(n[2]-n[1], 0), admitted)}, nil
	case "show":
		return r.show(), nil
	case "reload":
		return r.reload()
	case "drop":
		n, err := ints(args, 1)
		if err != nil {
			return nil, err
		}
		r.f.DropPartition(uint32(n[0]))
		return nil, nil
	}
	return nil, fmt.Errorf("unknown command %q", verb)
}

func (r *scriptRunner) newFilter(args []string) ([]string, error) {
	spec, partitions := Spec{}, 1
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "kind":
			spec.Kind = v
		case "p":
			spec.P, err = strconv.ParseFloat(v, 64)
		case "fp":
			spec.FalsePositiveRate, err = strconv.ParseFloat(v, 64)
		case "n":
			spec.N, err = strconv.Atoi(v)
		case "bytes":
			spec.MaxPartitionBytes, err = strconv.Atoi(v)
		case "generations":
			spec.Generations, err = strconv.Atoi(v)
		case "partitions":
			partitions, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return nil, err
		}
	}
	f, err := New(spec, testSalt, partitions)
	if err != nil {
		r.f = nil
		return nil, err
	}
	r.f, r.spec, r.partitions = f, spec, partitions
	z := f.Sizing()
	if !f.Stateful() {
		return []string{"stateless"}, nil
	}
	return []string{fmt.Sprintf("levels %d, generations %d, filters of %d bits and %d hashes, capacity %d",
		z.Levels, z.Generations, z.FilterBits, z.Hashes, z.Capacity)}, nil
}

func (r *scriptRunner) show() []string {
	var out []string
	for _, p := range r.f.Partitions(nil) {
		for i, g := range r.f.parts[p].gens {
			out = append(out, fmt.Sprintf("partition %d generation %d: insertions %v", p, i, g.inserts))
		}
	}
	return out
}

func (r *scriptRunner) reload() ([]string, error) {
	g, err := New(r.spec, testSalt, r.partitions)
	if err != nil {
		return nil, err
	}
	size := 0
	for p := range uint32(r.partitions) {
		state := r.f.MarshalPartition(p)
		if err := g.UnmarshalPartition(p, state); err != nil {
			return nil, err
		}
		size += len(state)
	}
	r.f = g
	return []string{fmt.Sprintf("%d partitions, %d bytes of state", r.partitions, size)}, nil
}

// parseSighting parses P:ID.
func parseSighting(s string) (uint32, uint64, error) {
	ps, is, ok := strings.Cut(s, ":")
	p, err1 := strconv.ParseUint(ps, 10, 32)
	id, err2 := strconv.ParseUint(is, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("sighting %q is not PARTITION:ID", s)
	}
	return uint32(p), id, nil
}

// ints parses exactly n non-negative integers.
func ints(args []string, n int) ([]int, error) {
	if len(args) != n {
		return nil, fmt.Errorf("%d arguments, want %d", len(args), n)
	}
	out := make([]int, n)
	for i, a := range args {
		v, err := strconv.Atoi(a)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("argument %q is not a non-negative integer", a)
		}
		out[i] = v
	}
	return out, nil
}
