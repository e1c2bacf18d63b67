package ams

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestOptimizerSpecDefaultsAndNew(t *testing.T) {
	for _, tc := range []struct {
		spec OptimizerSpec
		want Optimizer
	}{
		{OptimizerSpec{}, Adagrad{LR: 0.01, InitialAccumulator: 0.1, Eps: 1e-8}},
		{OptimizerSpec{Name: "sgd", LR: 0.5}, SGD{LR: 0.5}},
		{OptimizerSpec{Name: "adam"}, Adam{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		{OptimizerSpec{Name: "ftrl", LR: 0.05, L1: 1, L2: 2}, FTRL{Alpha: 0.05, Beta: 1, L1: 1, L2: 2}},
		{OptimizerSpec{Name: "momentum", Momentum: 0.5}, Momentum{LR: 0.01, Momentum: 0.5}},
	} {
		got, err := tc.spec.New()
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if got != tc.want {
			t.Errorf("%+v.New() = %#v, want %#v", tc.spec, got, tc.want)
		}
	}
	var s OptimizerSpec
	s.EnsureDefaults()
	want := OptimizerSpec{Name: "adagrad", LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8,
		InitialAccumulator: 0.1, Beta: 1, Momentum: 0.9}
	if s != want {
		t.Fatalf("defaults = %+v, want %+v", s, want)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name string
		err  error
		want []string // one substring per expected problem
	}{
		{"optimizer", OptimizerSpec{Name: "rmsprop", LR: -1, Beta1: 1, Beta2: nan, Eps: -1,
			InitialAccumulator: -0.1, L1: -1, L2: float32(math.Inf(1)), Beta: -1, Momentum: 2}.Validate(),
			[]string{"name \"rmsprop\"", "lr -1", "beta1 1", "beta2 NaN", "eps -1", "initial_accumulator -0.1",
				"l1 -1", "l2 +Inf", "beta -1", "momentum 2"}},
		{"ftrl-needs-beta-or-l2", OptimizerSpec{Name: "ftrl", LR: 1, Beta1: 0.9, Beta2: 0.9, Eps: 1,
			Momentum: 0.5}.Validate(), []string{"ftrl needs beta > 0 or l2 > 0"}},
		{"init", InitSpec{Kind: "gaussian", Value: nan, Scale: -1}.Validate(),
			[]string{"kind \"gaussian\"", "value NaN", "scale -1"}},
		{"table", TableSpec{Name: "", Dim: 0, Optimizer: OptimizerSpec{Name: "x"}, Init: InitSpec{Kind: "y"}}.Validate(),
			[]string{"name is empty", "dim 0", "name \"x\"", "lr 0", "kind \"y\""}},
		{"table-dim-too-big", TableSpec{Name: "t", Dim: MaxDim + 1}.Validate(), []string{"dim 65537"}},
		{"dense", DenseSpec{Size: -3}.Validate(), []string{"name is empty", "size -3", "name \"\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("Validate returned nil")
			}
			if !errors.Is(tc.err, ErrBadSpec) {
				t.Fatalf("%v does not wrap ErrBadSpec", tc.err)
			}
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			parts := tc.err.(interface{ Unwrap() []error }).Unwrap()
			if len(parts) < len(tc.want) {
				t.Errorf("%d joined errors, want at least %d:\n%s", len(parts), len(tc.want), msg)
			}
			for _, p := range parts {
				if !errors.Is(p, ErrBadSpec) {
					t.Errorf("part %q does not wrap ErrBadSpec", p)
				}
			}
		})
	}
}

func TestNewTableRejectsBadSpec(t *testing.T) {
	_, err := NewTable(TableSpec{Name: "t", Dim: -1, Optimizer: OptimizerSpec{Name: "nope"}})
	if !errors.Is(err, ErrBadSpec) {
		t.Fatalf("NewTable: %v, want ErrBadSpec", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Fatalf("NewTable reported %d problems, want 2: %v", n, err)
	}
	tb, err := NewTable(TableSpec{Name: "t", Dim: 4})
	if err != nil {
		t.Fatal(err)
	}
	if s := tb.Spec(); s.Optimizer.Name != "adagrad" || s.Init.Kind != "normal" || s.Init.Scale != 0.01 {
		t.Fatalf("Spec() has no defaults: %+v", s)
	}
}

// TestSpecYAMLTags checks every field of the specs has a lower_snake yaml
// tag, and every field doc states its default.
func TestSpecYAMLTags(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, v := range []any{OptimizerSpec{}, InitSpec{}, TableSpec{}, DenseSpec{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			if tag := f.Tag.Get("yaml"); !snake.MatchString(tag) {
				t.Errorf("%s.%s: yaml tag %q is not lower_snake", rt.Name(), f.Name, tag)
			}
		}
	}
}
