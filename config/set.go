package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/xdlgo/xps/reader"
)

// ErrBadPath is wrapped by Set's errors for a path that names no key.
var ErrBadPath = errors.New("config: no such key")

// Set sets the key at path to value, as the YAML file would. path is the
// key's YAML path, dot-separated ("train.batch_size",
// "model.output.sparsity"); a list element is "name[i]" and "name[*]" is
// every element ("model.tables[*].optimizer.lr"). value is YAML: a scalar
// ("0.05", "true", "10s"), or a list, with or without its brackets
// ("200,80", "[200, 80]", "" for none). A zero where zero means
// nothing (train.batch_size, train.epochs, ...; see the package doc) is
// an error wrapping ErrInvalid, and is set all the same.
func (c *Config) Set(path, value string) error {
	if err := set(reflect.ValueOf(c).Elem(), strings.Split(path, "."), value); err != nil {
		return fmt.Errorf("%s=%s: %w", path, value, err)
	}
	return refuseZero(c, path)
}

// set walks v down the path's remaining parts and decodes value into what
// they name.
func set(v reflect.Value, parts []string, value string) error {
	if len(parts) == 0 {
		return decode(v, value)
	}
	name, index, err := splitIndex(parts[0])
	if err != nil {
		return err
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return fmt.Errorf("%w: %q is not a section", ErrBadPath, name)
	}
	f, ok := field(v, name)
	if !ok {
		return fmt.Errorf("%w: %q (keys here: %s)", ErrBadPath, name, strings.Join(keys(v.Type()), ", "))
	}
	if index == "" {
		return set(f, parts[1:], value)
	}
	if f.Kind() != reflect.Slice {
		return fmt.Errorf("%w: %q is not a list", ErrBadPath, name)
	}
	if index == "*" {
		for i := 0; i < f.Len(); i++ {
			if err := set(f.Index(i), parts[1:], value); err != nil {
				return err
			}
		}
		return nil
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= f.Len() {
		return fmt.Errorf("%w: %s[%s]: the list has %d elements", ErrBadPath, name, index, f.Len())
	}
	return set(f.Index(i), parts[1:], value)
}

// splitIndex splits "name[i]" into name and i ("" without brackets).
func splitIndex(part string) (name, index string, err error) {
	name, rest, ok := strings.Cut(part, "[")
	if !ok {
		return part, "", nil
	}
	index, ok = strings.CutSuffix(rest, "]")
	if !ok || index == "" || name == "" {
		return "", "", fmt.Errorf("%w: bad list index in %q", ErrBadPath, part)
	}
	return name, index, nil
}

// field returns the field of struct v whose YAML key is name, looking
// into inline (embedded) structs.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || key == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if f, ok := field(v.Field(i), name); ok {
				return f, true
			}
			continue
		}
		if key == "" {
			key = strings.ToLower(sf.Name)
		}
		if key == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// keys lists the YAML keys of struct type t, for error messages.
func keys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		key, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		switch {
		case !sf.IsExported() || key == "-":
		case strings.Contains(opts, "inline"):
			out = append(out, keys(sf.Type)...)
		case key == "":
			out = append(out, strings.ToLower(sf.Name))
		default:
			out = append(out, key)
		}
	}
	return out
}

// decode decodes the YAML value into v; a list may leave out its brackets.
func decode(v reflect.Value, value string) error {
	t := v.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && !strings.HasPrefix(strings.TrimSpace(value), "[") {
		value = "[" + value + "]"
	}
	if t.Kind() == reflect.Struct && t.String() != "time.Duration" {
		return fmt.Errorf("%w: a section, not a key: give one of its keys (%s)", ErrBadPath, strings.Join(keys(t), ", "))
	}
	p := reflect.New(v.Type())
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(value), &node); err != nil {
		return err
	}
	if len(node.Content) == 0 { // an empty scalar
		node = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""}
	} else {
		node = *node.Content[0]
	}
	if node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null" {
		// As in the YAML file: null empties a pointer, list or map, and
		// leaves any other key as it was.
		switch v.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			v.Set(reflect.Zero(v.Type()))
		}
		return nil
	}
	if err := node.Decode(p.Interface()); err != nil {
		return err
	}
	v.Set(p.Elem())
	return nil
}

// Overrides collects command-line changes to a Config, in the order given:
// -set path=value (repeatable) and the short flags of Aliases. Bind
// registers them on a flag set; Apply makes them.
type Overrides struct {
	changes []change
}

type change struct {
	flag, path, value string
}

// Add appends a change of path to value, made by by (named in its error
// as a flag would be): a program's own change, after the command line's.
func (o *Overrides) Add(by, path, value string) {
	o.changes = append(o.changes, change{by, path, value})
}

// Alias is a short flag that sets one or more config keys.
type Alias struct {
	// Flag is the flag's name, without the dash.
	Flag string
	// Paths are the keys it sets to its value; "path=value" sets path to a
	// fixed value instead.
	Paths []string
}

// Aliases are the short flags of the common keys.
var Aliases = []Alias{
	{"train", []string{"job.train"}},
	{"test", []string{"job.test"}},
	{"valid", []string{"job.valid"}},
	{"test-scores", []string{"job.test_scores"}},
	{"warm-start", []string{"job.warm_start"}},
	{"workers", []string{"job.workers"}},
	{"split-bytes", []string{"job.split_bytes"}},
	{"snapshot-store", []string{"snapshot.store"}},
	{"snapshot-every", []string{"snapshot.every"}},
	{"snapshot-every-samples", []string{"snapshot.every_samples"}},
	{"export-store", []string{"export.store"}},
	{"export-every", []string{"export.every"}},
	{"snapshot-keep", []string{"snapshot.keep"}},
	{"format", []string{"train.format"}},
	{"on-error", []string{"train.on_error"}},
	{"epochs", []string{"train.epochs"}},
	{"batch-size", []string{"train.batch_size"}},
	{"eval-every", []string{"train.eval_every"}},
	{"patience", []string{"train.patience"}},
	{"sync", []string{"train.sync"}},
	{"autotune", []string{"train.autotune"}},
	{"autotune-budget", []string{"autotune.budget"}},
	{"train-samples", []string{"data.train_samples"}},
	{"kafka", []string{"kafka.brokers"}},
	{"topic", []string{"kafka.topic"}},
	{"streaming", []string{"kafka.streaming"}},
	{"dim", []string{"model.tables[*].dim"}},
	{"lr", []string{"model.tables[*].optimizer.lr"}},
	{"dense-lr", []string{"model.dense_optimizer.lr"}},
	{"seed", []string{"model.seed", "model.tables[*].init.seed"}},
	{"hidden", []string{"model.hidden"}},
	{"output", []string{"model.output.kind"}},
	{"sparsity", []string{"model.output.sparsity", "model.output.infer_sparsity=0"}},
	{"hash", []string{"model.output.hash"}},
	{"output-lr", []string{"model.output.lr"}},
	{"output-hidden", []string{"model.output.hidden"}},
}

// Bind registers -set and the Aliases on fs; with sections, only the
// aliases whose keys all lie in those sections ("job", "snapshot",
// "train.format", ...), for a command that reads only part of the config.
func (o *Overrides) Bind(fs *flag.FlagSet, sections ...string) {
	fs.Func("set", "set a config key, as the YAML file would: -set path=value, repeatable (e.g. -set train.batch_size=512 -set model.tables[*].optimizer.lr=0.02)",
		func(s string) error {
			path, value, ok := strings.Cut(s, "=")
			if !ok || path == "" {
				return fmt.Errorf("want path=value, got %q", s)
			}
			o.changes = append(o.changes, change{"set", path, value})
			return nil
		})
	for _, a := range Aliases {
		if !a.within(sections) {
			continue
		}
		fs.Func(a.Flag, "sets "+strings.Join(a.Paths, ", ")+" (default "+aliasDefault(a)+")", func(v string) error {
			for _, p := range a.Paths {
				path, fixed, isFixed := strings.Cut(p, "=")
				if !isFixed {
					fixed = v
				}
				o.changes = append(o.changes, change{a.Flag, path, fixed})
			}
			return nil
		})
	}
}

// within reports whether every key of a lies in one of sections (none:
// every alias does).
func (a Alias) within(sections []string) bool {
	if len(sections) == 0 {
		return true
	}
	for _, p := range a.Paths {
		in := false
		for _, s := range sections {
			in = in || p == s || strings.HasPrefix(p, s+".") || strings.HasPrefix(p, s+"=")
		}
		if !in {
			return false
		}
	}
	return true
}

// Apply makes the changes to c in the order they were given and reports
// every one that failed.
func (o *Overrides) Apply(c *Config) error {
	var errs []error
	for _, ch := range o.changes {
		if err := c.Set(ch.path, ch.value); err != nil {
			errs = append(errs, fmt.Errorf("-%s: %w", ch.flag, err))
		}
	}
	return errors.Join(errs...)
}

// formatOfDir is the format FormatOfName gives the first file of the
// local directory p (hidden files and _SUCCESS left out); false for
// anything else.
func formatOfDir(p string) (reader.Format, bool) {
	if strings.Contains(p, "://") {
		return 0, false
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return 0, false
	}
	files, err := reader.ExpandPaths([]string{p})
	if err != nil || len(files) == 0 {
		return 0, false
	}
	return reader.FormatOfName(files[0])
}

// FormatOf is the format the extension of the training files names
// (reader.FormatOfName), when every one of them that has a known
// extension names the same; else "libffm". A local directory (as Spark
// writes: part files, _SUCCESS) counts as the name of its first file.
func FormatOf(train []string) string {
	var found reader.Format
	for _, p := range train {
		f, ok := reader.FormatOfName(p)
		if !ok {
			f, ok = formatOfDir(p)
		}
		switch {
		case !ok:
		case found != 0 && f != found:
			return "libffm"
		default:
			found = f
		}
	}
	if found == 0 {
		return "libffm"
	}
	return found.String()
}
