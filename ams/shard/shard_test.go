package shard

import (
	"errors"
	"testing"
	"time"

	"github.com/xdlgo/xps/ams"
)

func TestShardRefusals(t *testing.T) {
	s := New(Options{ID: "t", Stripes: 2, Now: func() time.Time { return time.Unix(1000, 0) }})
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	grad := []float32{1, 1}
	// A request of another cluster version is refused and not applied.
	if err := s.Push(2, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: grad}}); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("stale push = %v, want ams.ErrStaleVersion", err)
	}
	st, _ := s.Stats()
	if st.Tables[0].Rows != 0 || st.Pushes != 0 {
		t.Fatalf("a stale push was applied: %+v", st)
	}
	// Lengths that do not match ids x dim.
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: make([]float32, 3)}}, true); !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("bad length = %v, want ams.ErrBadRequest", err)
	}
	if err := s.Pull(1, []ams.TableRequest{{Table: "nope", IDs: []uint64{7}, Rows: grad}}, true); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("unknown table = %v, want ErrUnknownTable", err)
	}
	if _, err := s.Declare(1, nil, []DenseDecl{{Spec: ams.DenseSpec{Name: "d", Size: 4}, Lo: 2, Hi: 6}}); !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("dense range past its size = %v, want ams.ErrBadRequest", err)
	}
	// A valid push is applied: SGD from zeros.
	if err := s.Push(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7, 7}, Rows: []float32{1, 2, 3, 4}}}); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 2)
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: out}}, false); err != nil {
		t.Fatal(err)
	}
	if out[0] != -4 || out[1] != -6 {
		t.Fatalf("row after two pushes of one id = %v, want [-4 -6]", out)
	}
	// A push whose dense part is bad applies nothing, its sparse part included
	// (checked through the gRPC service, which owns that rule, in the client
	// tests); here: a dense vector declared without initial values is refused.
	if _, err := s.Declare(1, nil, []DenseDecl{{Spec: ams.DenseSpec{Name: "noinit", Size: 4}, Lo: 0, Hi: 4}}); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.PullDense(1, "noinit"); !errors.Is(err, ams.ErrNotInitialized) {
		t.Fatalf("pull of a dense vector without initial values = %v, want ErrNotInitialized", err)
	}
	if err := s.PushDense(1, "noinit", make([]float32, 3)); !errors.Is(err, ams.ErrBadRequest) {
		t.Fatalf("dense push of the wrong length = %v, want ams.ErrBadRequest", err)
	}
	s.Close()
	if err := s.Pull(1, []ams.TableRequest{{Table: "emb", IDs: []uint64{7}, Rows: out}}, false); !errors.Is(err, ams.ErrClosed) {
		t.Fatalf("pull after Close = %v, want ams.ErrClosed", err)
	}
	s.Close() // idempotent
}

// TestVersions: a shard serves one version; a blank one (Options.Blank)
// serves none until a Begin or a restore starts one; a restore's or a
// begin's version only moves forward.
func TestVersions(t *testing.T) {
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}}
	for _, tc := range []struct {
		name    string
		blank   bool
		prepare func(s *Shard) error
		declare uint64
		want    error
		version uint64
	}{
		{name: "default-serves-1", declare: 1, version: 1},
		{name: "blank-serves-none", blank: true, declare: 1, want: ams.ErrStaleVersion, version: 0},
		{name: "blank-begun", blank: true, prepare: func(s *Shard) error { return s.Begin(7, 0) }, declare: 7, version: 7},
		{name: "begun-refuses-older", blank: true, prepare: func(s *Shard) error { return s.Begin(5, 0) }, declare: 4, want: ams.ErrStaleVersion, version: 5},
		{name: "declared-refuses-newer", prepare: func(s *Shard) error { _, err := s.Declare(1, []ams.TableSpec{spec}, nil); return err },
			declare: 2, want: ams.ErrStaleVersion, version: 1},
		{name: "restore-moves-forward", prepare: func(s *Shard) error {
			if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
				return err
			}
			return s.advanceVersion(3)
		}, declare: 3, version: 3},
		{name: "begin-never-back", prepare: func(s *Shard) error {
			if err := s.Begin(3, 0); err != nil {
				return err
			}
			if err := s.Begin(2, 0); !errors.Is(err, ams.ErrStaleVersion) {
				return errors.New("began 2 after 3")
			}
			return nil
		}, declare: 1, want: ams.ErrStaleVersion, version: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{ID: "t", Stripes: 2, Blank: tc.blank})
			defer s.Close()
			if tc.prepare != nil {
				if err := tc.prepare(s); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Declare(tc.declare, []ams.TableSpec{spec}, nil)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Declare(%d) = %v, want %v", tc.declare, err, tc.want)
			}
			if v := s.Version(); v != tc.version {
				t.Fatalf("version %d, want %d", v, tc.version)
			}
		})
	}
}

// TestBeginEmptiesAndFencesStripes: Begin drops every declaration and
// state entry, and a push that passed the shard's version check just
// before it (split, not yet served) is refused by the stripes rather than
// applied to the new version's rows.
func TestBeginEmptiesAndFencesStripes(t *testing.T) {
	s := New(Options{ID: "t", Stripes: 2})
	defer s.Close()
	spec := ams.TableSpec{Name: "emb", Dim: 2, Optimizer: ams.OptimizerSpec{Name: "sgd", LR: 1}, Init: ams.InitSpec{Kind: "zeros"}}
	if _, err := s.Declare(1, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutState(1, []StateEntry{{Key: "reader/w", Value: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	ids := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	late, _, err := s.split(newCall(2), opPush, 1, []ams.TableRequest{{Table: "emb", IDs: ids, Rows: make([]float32, 2*len(ids))}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(2, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TableSpec("emb"); !errors.Is(err, ams.ErrUnknownTable) {
		t.Fatalf("table after Begin: %v, want ams.ErrUnknownTable", err)
	}
	if got, err := s.GetState(2, "reader/"); err != nil || len(got) != 0 {
		t.Fatalf("state after Begin: %v, %v", got, err)
	}
	if _, err := s.Declare(2, []ams.TableSpec{spec}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.dispatch(late); !errors.Is(err, ams.ErrStaleVersion) {
		t.Fatalf("a version-1 push served after Begin(2) = %v, want ams.ErrStaleVersion", err)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Tables[0].Rows != 0 {
		t.Fatalf("the stale push created %d rows", st.Tables[0].Rows)
	}
}

// TestOptionsValidate: -stripes -1 and 100000 are refused, 0 is the
// default (one per core) (issue 20, item 9).
func TestOptionsValidate(t *testing.T) {
	for _, n := range []int{-1, MaxStripes + 1, 100000} {
		if err := (Options{Stripes: n}).Validate(); !errors.Is(err, ams.ErrBadSpec) {
			t.Errorf("Stripes %d: Validate = %v, want ams.ErrBadSpec", n, err)
		}
	}
	for _, n := range []int{0, 1, MaxStripes} {
		if err := (Options{Stripes: n}).Validate(); err != nil {
			t.Errorf("Stripes %d: Validate = %v", n, err)
		}
	}
}
