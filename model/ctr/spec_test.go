package ctr

import (
	"testing"

	"github.com/xdlgo/xps/config"
)

// TestSpecDescribesHistory: a din or dien Net's Spec places the MLP's
// whole input (v, the layout's columns but the history's and negatives',
// dien's sum), names the history and target columns inside the input
// row, and places every parameter of the history part once, without
// overlap, inside the dense vector.
func TestSpecDescribesHistory(t *testing.T) {
	for _, kind := range []string{config.KindDIN, config.KindDIEN} {
		cfg, sh := seqModel(kind, 5)
		net, err := NewNet(cfg, sh)
		if err != nil {
			t.Fatal(err)
		}
		s := net.Spec(cfg)
		sq := s.Seq
		if !s.Sequence || sq == nil || sq.Kind != kind || sq.MaxLen != 5 || sq.Width != 5 {
			t.Fatalf("%s: spec %+v, seq %+v", kind, s, sq)
		}
		width, vs, sums := 0, 0, 0
		for _, r := range sq.Inputs {
			switch r.Of {
			case "v":
				width, vs = width+sq.Width, vs+1
			case "sum":
				width, sums = width+sq.Width, sums+1
			case "x":
				if r.Lo < 0 || r.Hi <= r.Lo || r.Hi > s.Width {
					t.Fatalf("%s: input range %+v of a row of %d", kind, r, s.Width)
				}
				for c := r.Lo; c < r.Hi; c++ {
					if c == sq.LenCol {
						t.Fatalf("%s: the MLP reads the length column %d", kind, c)
					}
					for _, f := range sq.History {
						if c >= f.Col && c < f.Col+sq.MaxLen*f.Dim {
							t.Fatalf("%s: the MLP reads history field %d's column %d", kind, f.Field, c)
						}
					}
				}
				width += r.Hi - r.Lo
			}
		}
		wantSums := map[string]int{config.KindDIN: 0, config.KindDIEN: 1}[kind]
		if width != s.MLP[0] || vs != 1 || sums != wantSums {
			t.Fatalf("%s: inputs %+v: %d columns (MLP input %d), %d v, %d sums", kind, sq.Inputs, width, s.MLP[0], vs, sums)
		}
		if h := sq.History; len(h) != 2 || h[0].Field != 4 || h[0].Dim+h[1].Dim != sq.Width || sq.LenCol != h[0].Col+5*h[0].Dim {
			t.Fatalf("%s: history %+v, length column %d", kind, h, sq.LenCol)
		}
		if sq.Namespace[4] != 0 || sq.Namespace[5] != 1 || sq.Namespace[3] != 3 {
			t.Fatalf("%s: namespaces %v: history fields hash in their targets'", kind, sq.Namespace)
		}
		used := make([]bool, net.NumParams())
		for _, p := range s.Params {
			n := 1
			for _, d := range p.Shape {
				n *= d
			}
			for i := p.Offset; i < p.Offset+n; i++ {
				if i >= len(used) || used[i] {
					t.Fatalf("%s: param %s [%d, %d) outside or over another (%d params)", kind, p.Name, p.Offset, p.Offset+n, len(used))
				}
				used[i] = true
			}
		}
		for i, u := range used {
			if !u {
				t.Fatalf("%s: dense parameter %d is in no ParamSpec", kind, i)
			}
		}
	}
}
