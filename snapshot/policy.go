package snapshot

import (
	"errors"
	"fmt"
	"time"
)

// Policy says where a cluster's snapshots go and when they are taken. The
// scheduler follows it; the job config's snapshot section is this struct,
// so the scheduler, the workers and the embedded cluster read one section.
type Policy struct {
	// Store is where snapshots go: a directory every shard can reach, or
	// hdfs://HOST:PORT/PATH (OpenStore).
	//
	// The default value is empty: no snapshots, and a lost shard fails the
	// job.
	Store string `yaml:"store"`
	// Every is the interval between periodic snapshots; a negative value
	// takes them only on request (and every EverySamples).
	//
	// The default value is 10m.
	Every time.Duration `yaml:"every" zero:"refused; a negative value takes snapshots only on request"`
	// EverySamples also takes a snapshot once the workers' checkpoints in
	// the model count this many more samples applied than at the last one
	// taken for this reason.
	//
	// The default value is 0: off.
	EverySamples int64 `yaml:"every_samples"`
	// Keep is how many complete snapshots are kept.
	//
	// The default value is 3.
	Keep int `yaml:"keep" zero:"refused"`
}

// Default values of Policy.
const (
	DefaultEvery = 10 * time.Minute
	DefaultKeep  = 3
)

// EnsureDefaults fills the zero fields with their defaults.
func (p *Policy) EnsureDefaults() {
	if p.Every == 0 {
		p.Every = DefaultEvery
	}
	if p.Keep == 0 {
		p.Keep = DefaultKeep
	}
}

// Periodic returns the interval of periodic snapshots, 0 when there are
// none (no store, or only on request).
func (p *Policy) Periodic() time.Duration {
	if p.Store == "" || p.Every < 0 {
		return 0
	}
	return p.Every
}

// Validate reports every problem at once; call EnsureDefaults first.
func (p *Policy) Validate() error {
	var errs []error
	if p.Keep < 1 {
		errs = append(errs, fmt.Errorf("snapshot: keep %d: at least 1", p.Keep))
	}
	if p.EverySamples < 0 {
		errs = append(errs, fmt.Errorf("snapshot: every_samples %d is negative", p.EverySamples))
	}
	if p.EverySamples > 0 && p.Store == "" {
		errs = append(errs, errors.New("snapshot: every_samples without a store"))
	}
	return errors.Join(errs...)
}
