package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/xdlgo/xps/filters"
)

// TestTableLifecycleConfig: admission, expiry and a budget parse from
// YAML per table; every problem of them is refused at once, before any
// training.
func TestTableLifecycleConfig(t *testing.T) {
	c, err := Parse([]byte(`
model:
  tables:
    - name: emb
      dim: 8
      admission: {kind: count, n: 3, false_positive_rate: 0.001}
      expiry: {ttl_samples: 2000000, min_hits: 3, min_hits_ttl: 1h, expr: 'hits < 3 && age > "72h"'}
      budget: {rows: 1000000}
train: {batch_size: 256}
`))
	if err != nil {
		t.Fatal(err)
	}
	tab := c.Model.Tables[0]
	if tab.Admission.N != 3 || tab.Admission.Generations != filters.DefaultGenerations || tab.Expiry.TTLSamples != 2000000 ||
		tab.Expiry.MaxExpireFraction != filters.DefaultMaxExpireFraction || tab.Budget.Rows != 1000000 {
		t.Fatalf("table %+v", tab)
	}
	_, err = Parse([]byte(`
model:
  fields: 4
  tables:
    - name: emb
      dim: 8
      admission: {kind: count, n: 300}
      expiry: {ttl_samples: -5, expr: 'hits <'}
      budget: {rows: 1000}
train: {batch_size: 256}
`))
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, filters.ErrBadPolicy) {
		t.Fatalf("bad lifecycle: %v", err)
	}
	for _, want := range []string{"n 300", "ttl_samples", "expr", "budget.rows 1000 is below one batch's rows (train.batch_size 256 x 4 fields = 1024)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
}
