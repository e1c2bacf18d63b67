package export

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Policy says where a job's model exports go, when they are taken and
// how rows are encoded. The scheduler follows it; the job config's export
// section is this struct.
type Policy struct {
	// Store is where exports go: a directory every shard can reach, or
	// hdfs://HOST:PORT/PATH (snapshot.OpenStore).
	//
	// The default value is empty: no exports.
	Store string `yaml:"store"`
	// Every is the interval between exports; a negative value takes them
	// only on request (scheduler -export-now).
	//
	// The default value is 1m.
	Every time.Duration `yaml:"every" zero:"refused; a negative value takes exports only on request"`
	// EverySamples also takes an export once the workers' checkpoints in
	// the model count this many more samples applied than at the last one
	// taken for this reason.
	//
	// The default value is 0: off.
	EverySamples int64 `yaml:"every_samples"`
	// FullEvery makes every FullEvery-th export a full one (the others are
	// deltas onto the previous export), so that a server can start from a
	// recent full export and Keep bounds the store. The first export, and
	// the first after the cluster restored a snapshot, is always full.
	//
	// The default value is 100.
	FullEvery int `yaml:"full_every" zero:"refused"`
	// Keep is how many full exports are kept, each with its deltas.
	//
	// The default value is 2.
	Keep int `yaml:"keep" zero:"refused"`
	// Quant is the encoding of every table's rows: fp32, fp16 or int8
	// (see the constants); Tables overrides it per table.
	//
	// The default value is "fp32".
	Quant  string            `yaml:"quant"`
	Tables map[string]string `yaml:"tables"`
}

// Default values of Policy.
const (
	DefaultEvery     = time.Minute
	DefaultFullEvery = 100
	DefaultKeep      = 2
)

// EnsureDefaults fills the zero fields with their defaults.
func (p *Policy) EnsureDefaults() {
	if p.Every == 0 {
		p.Every = DefaultEvery
	}
	if p.FullEvery == 0 {
		p.FullEvery = DefaultFullEvery
	}
	if p.Keep == 0 {
		p.Keep = DefaultKeep
	}
	if p.Quant == "" {
		p.Quant = FP32
	}
}

// Periodic returns the interval of periodic exports, 0 when there are
// none (no store, or only on request).
func (p *Policy) Periodic() time.Duration {
	if p.Store == "" || p.Every < 0 {
		return 0
	}
	return p.Every
}

// QuantOf returns the encoding of table's rows.
func (p *Policy) QuantOf(table string) string {
	if q, ok := p.Tables[table]; ok {
		return q
	}
	return p.Quant
}

// QuantMap returns the encoding of each of tables.
func (p *Policy) QuantMap(tables []string) map[string]string {
	m := make(map[string]string, len(tables))
	for _, t := range tables {
		m[t] = p.QuantOf(t)
	}
	return m
}

// Validate reports every problem at once; call EnsureDefaults first.
// tables lists the model's tables, which the per-table encodings must
// name.
func (p *Policy) Validate(tables []string) error {
	var errs []error
	if p.Keep < 1 {
		errs = append(errs, fmt.Errorf("export: keep %d: at least 1", p.Keep))
	}
	if p.EverySamples < 0 {
		errs = append(errs, fmt.Errorf("export: every_samples %d is negative", p.EverySamples))
	}
	if p.EverySamples > 0 && p.Store == "" {
		errs = append(errs, errors.New("export: every_samples without a store"))
	}
	if p.FullEvery < 1 {
		errs = append(errs, fmt.Errorf("export: full_every %d: at least 1", p.FullEvery))
	}
	if err := CheckQuant(p.Quant); err != nil {
		errs = append(errs, err)
	}
	for _, t := range slices.Sorted(maps.Keys(p.Tables)) {
		if err := CheckQuant(p.Tables[t]); err != nil {
			errs = append(errs, fmt.Errorf("export: table %q: %w", t, err))
		}
		if !slices.Contains(tables, t) {
			errs = append(errs, fmt.Errorf("export: tables names %q, which the model does not have (it has %v)", t, tables))
		}
	}
	return errors.Join(errs...)
}
