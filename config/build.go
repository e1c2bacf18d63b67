package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// A Source is a part of a job's configuration that its user gives: a YAML
// file (File, YAML), a Config made in Go, whose zero fields mean their
// defaults, or the command line's changes (*Overrides). Build takes them.
type Source interface {
	// give adds the source to b.
	give(b *builder)
}

// Build returns a job's configuration, built once: the defaults, then the
// user's sources, each over those before it, then one validation of the
// whole. The YAML files and Configs come first, in order; then the
// command line's changes, in order, over every file (as on a command
// line). The defaults the changes meet are those of the kind and output
// the sources end with, whichever source names them (-set model.kind=fm
// over a file gets fm's hidden layers, none, as without the file); what
// follows from keys a change may still set (the wide part and its table,
// train.format from job.train, train.valid_metric from the output, job.holdout for autotune) is
// filled once the changes are made.
//
// The error reports every problem at once (errors.Join): each source's own
// (a file that cannot be read, its syntax, unknown keys, values of the
// wrong type, zeros written where zero means nothing, changes to no key)
// and every problem of the configuration they make (Validate). The Config
// returned is Built: the job that gets it (package job) takes it as it is.
func Build(sources ...Source) (Config, error) {
	var b builder
	for _, s := range sources {
		s.give(&b)
	}
	c := b.base()
	for _, o := range b.changes {
		if err := o.Apply(&c); err != nil {
			b.errs = append(b.errs, err)
		}
	}
	c.EnsureDefaults()
	if err := errors.Join(append(b.errs, c.Validate())...); err != nil {
		return Config{}, err
	}
	c.built = true
	return c, nil
}

// Built reports whether c is what Build returned: complete and valid.
// Package job takes such a Config as it is, without building it again; a
// Config changed after Build still reports true, and who changes it keeps
// it valid.
func (c *Config) Built() bool { return c.built }

// builder holds what Build's sources give.
type builder struct {
	// given is what the files and Configs give, zero where none does.
	given Config
	// changes are the command line's, made once the defaults are filled.
	changes []*Overrides
	// errs are the sources' own problems.
	errs []error
}

// base is the configuration the changes are made to: the given keys with
// the defaults of the kind and output the changes end with (else those
// given), less the defaults that follow from keys a change may set: the
// wide part and its table, train.format, train.valid_metric,
// model.output.infer_sparsity (sparsity's) and job.holdout (autotune's),
// which EnsureDefaults fills after the changes.
func (b *builder) base() Config {
	g := &b.given
	c := *g
	c.Model.Tables = slices.Clone(g.Model.Tables)
	for _, o := range b.changes {
		o.last("model.kind", &c.Model.Kind)
		o.last("model.output.kind", &c.Model.Output.Kind)
	}
	c.EnsureDefaults()
	c.Model.Wide = g.Model.Wide
	if i := c.Model.TableIndex(WideTable); i >= 0 && g.Model.TableIndex(WideTable) < 0 {
		// The wide part's table, which EnsureDefaults adds: the changes
		// find the tables given (-dim sets their dims, never the wide
		// part's 1), and EnsureDefaults adds it again.
		c.Model.Tables = slices.Delete(c.Model.Tables, i, i+1)
	}
	c.Train.Format, c.Train.ValidMetric = g.Train.Format, g.Train.ValidMetric
	c.Model.Output.InferSparsity = g.Model.Output.InferSparsity
	c.Job.Holdout = g.Job.Holdout
	return c
}

// File is the YAML file at path, as YAML reads it ("": no file, for a
// command whose -config is not given).
func File(path string) Source { return fileSource(path) }

type fileSource string

func (f fileSource) give(b *builder) {
	if f == "" {
		return
	}
	doc, err := os.ReadFile(string(f))
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("config: %w", err))
		return
	}
	for _, err := range decodeYAML(&b.given, doc) {
		b.errs = append(b.errs, fmt.Errorf("config: %s: %w", f, err))
	}
}

// YAML is a YAML document, a configuration file's text. Unknown keys are
// errors, and so is a zero written where zero means nothing
// (train.batch_size: 0, ...; see the package doc).
func YAML(doc []byte) Source { return yamlSource(doc) }

type yamlSource []byte

func (y yamlSource) give(b *builder) { b.errs = append(b.errs, decodeYAML(&b.given, y)...) }

// decodeYAML decodes doc onto c and returns its problems: its syntax,
// unknown keys and values of the wrong type (the rest is decoded all the
// same, so that every problem shows in one run), and refused zeros.
func decodeYAML(c *Config, doc []byte) []error {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	var errs []error
	var te *yaml.TypeError
	if err := dec.Decode(c); errors.As(err, &te) {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalid, err))
	} else if err != nil && !errors.Is(err, io.EOF) {
		return []error{fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return []error{fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	return append(errs, explicitZeros(&root, c)...)
}

// give takes c's non-zero fields: in Go, a zero field means its default.
func (c Config) give(b *builder) {
	overlay(reflect.ValueOf(&b.given).Elem(), reflect.ValueOf(c))
}

// overlay sets the fields of dst that src gives (not zero), field by
// field in structs; a list, map or pointer src gives replaces dst's whole.
func overlay(dst, src reflect.Value) {
	if src.Kind() != reflect.Struct {
		if !src.IsZero() {
			dst.Set(src)
		}
		return
	}
	for i := 0; i < src.NumField(); i++ {
		if src.Type().Field(i).IsExported() {
			overlay(dst.Field(i), src.Field(i))
		}
	}
}

// give adds o's changes: Build makes them after the defaults.
func (o *Overrides) give(b *builder) {
	if o != nil {
		b.changes = append(b.changes, o)
	}
}

// last sets *v to the value the last of o's changes gives the string key
// at path, if one does (a value that does not decode is left to Apply to
// report).
func (o *Overrides) last(path string, v *string) {
	for _, ch := range o.changes {
		if ch.path == path {
			s := *v
			if decode(reflect.ValueOf(&s).Elem(), ch.value) == nil {
				*v = s
			}
		}
	}
}
