package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgPanel is what a test reads back of one panel of the SVG.
type svgPanel struct {
	area           [4]float64 // x, y, width, height of the plot area
	series         []string   // data-series of each path, in order
	points         [][2]float64
	xticks, yticks []string
}

// parseSVG decodes the SVG with encoding/xml (failing on malformed XML)
// and collects each panel's plot area, paths and tick labels.
func parseSVG(t *testing.T, doc []byte) []svgPanel {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var panels []svgPanel
	var text *[]string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return panels
		}
		if err != nil {
			t.Fatalf("malformed SVG: %v\n%s", err, doc)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			text = nil
			switch {
			case attr["class"] == "panel":
				panels = append(panels, svgPanel{})
			case attr["class"] == "plot-area":
				p := &panels[len(panels)-1]
				for i, k := range []string{"x", "y", "width", "height"} {
					p.area[i], _ = strconv.ParseFloat(attr[k], 64)
				}
			case el.Name.Local == "path" && attr["class"] == "series":
				p := &panels[len(panels)-1]
				p.series = append(p.series, attr["data-series"])
				p.points = append(p.points, pathPoints(t, attr["d"])...)
			case attr["class"] == "xtick":
				text = &panels[len(panels)-1].xticks
			case attr["class"] == "ytick":
				text = &panels[len(panels)-1].yticks
			}
		case xml.CharData:
			if text != nil {
				*text = append(*text, string(el))
				text = nil
			}
		}
	}
}

// pathPoints parses "M x y L x y ..." (and a trailing "l0 0").
func pathPoints(t *testing.T, d string) [][2]float64 {
	f := strings.Fields(strings.NewReplacer("M", " ", "L", " ", "l0 0", "").Replace(d))
	if len(f)%2 != 0 {
		t.Fatalf("path %q", d)
	}
	var pts [][2]float64
	for i := 0; i < len(f); i += 2 {
		x, err1 := strconv.ParseFloat(f[i], 64)
		y, err2 := strconv.ParseFloat(f[i+1], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("path %q", d)
		}
		pts = append(pts, [2]float64{x, y})
	}
	return pts
}

// driftFigure is the figure of bench/drift.sh: rows and RSS over samples.
func driftFigure() Figure {
	x := []float64{0, 5e6, 10e6, 20e6}
	return Figure{Title: "drift <&> \"filters\"", Panels: []Panel{
		{Title: "table rows", XLabel: "samples", YLabel: "rows", Series: []Series{
			{Name: "no filters", X: x, Y: []float64{0, 4e6, 8e6, 16e6}},
			{Name: "filters", X: x, Y: []float64{0, 1.5e6, 1.6e6, 1.55e6}},
		}},
		{Title: "RSS", XLabel: "samples", YUnit: Bytes, Series: []Series{
			{Name: "no filters", X: x, Y: []float64{3e8, 1.2e9, 2.1e9, 3.9e9}},
			{Name: "filters", X: x[:3], Y: []float64{3e8, 6e8, 6.2e8}},
			{Name: "one point", X: []float64{7e6}, Y: []float64{1e9}},
		}},
	}}
}

func TestSVG(t *testing.T) {
	f := driftFigure()
	var buf bytes.Buffer
	if err := f.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	panels := parseSVG(t, buf.Bytes())
	if len(panels) != len(f.Panels) {
		t.Fatalf("%d panels in the SVG, want %d", len(panels), len(f.Panels))
	}
	for i, p := range panels {
		var names []string
		for _, s := range f.Panels[i].Series {
			names = append(names, s.Name)
		}
		if !slices.Equal(p.series, names) {
			t.Errorf("panel %d: paths %q, want one per series %q", i, p.series, names)
		}
		a := p.area
		for _, pt := range p.points {
			if pt[0] < a[0]-0.05 || pt[0] > a[0]+a[2]+0.05 || pt[1] < a[1]-0.05 || pt[1] > a[1]+a[3]+0.05 {
				t.Errorf("panel %d: point %v outside the plot area %v", i, pt, a)
			}
		}
	}
	if x := panels[0].xticks; x[0] != "0" || x[len(x)-1] != "20M" {
		t.Errorf("x ticks %q: want 0 to 20M", x)
	}
	if y := panels[1].yticks; y[len(y)-1] != "4 GiB" || y[0] != "0" {
		t.Errorf("RSS ticks %q: want 0 to 4 GiB", y)
	}
	if !strings.Contains(buf.String(), "drift &lt;&amp;&gt; &#34;filters&#34;") {
		t.Error("the title is not escaped")
	}
}

func TestTickLabels(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		unit   Unit
		want   string
	}{
		{0, 20e6, Number, "0 5M 10M 15M 20M"},
		{1e5, 3e5, Number, "0 100K 200K 300K"},
		{1.2e5, 2e5, Number, "120K 140K 160K 180K 200K"},
		{0, 1.4e6, Number, "0 0.5M 1M 1.5M"},
		{0.7012, 0.7788, Number, "0.7 0.72 0.74 0.76 0.78"},
		{0, 3.2 * (1 << 30), Bytes, "0 1 GiB 2 GiB 3 GiB 4 GiB"},
		{2e8, 9e8, Bytes, "0 200 MiB 400 MiB 600 MiB 800 MiB 1000 MiB"},
		{-3, 3, Number, "-4 -2 0 2 4"},
		{5, 5, Number, "0 1 2 3 4 5"},
		{0, 0, Number, "0 0.2 0.4 0.6 0.8 1"},
	} {
		a := newAxis(tc.lo, tc.hi, tc.unit)
		if got := strings.Join(a.labels, " "); got != tc.want {
			t.Errorf("axis over [%v, %v]: ticks %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestAxisCovers checks invariant 3 on random ranges of every magnitude.
func TestAxisCovers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		e := r.IntN(600) - 300
		a, b := r.NormFloat64()*math.Pow(10, float64(e)), r.NormFloat64()*math.Pow(10, float64(e+r.IntN(3)))
		lo, hi := min(a, b), max(a, b)
		for _, unit := range []Unit{Number, Bytes} {
			ax := newAxis(lo, hi, unit)
			if !(ax.lo <= lo && ax.hi >= hi && ax.lo < ax.hi) || len(ax.ticks) < 2 || len(ax.ticks) != len(ax.labels) ||
				!slices.IsSorted(ax.ticks) || math.IsNaN(ax.pos(lo)) {
				t.Fatalf("axis over [%g, %g] (%v): [%g, %g] ticks %v", lo, hi, unit, ax.lo, ax.hi, ax.labels)
			}
		}
	}
}

func TestBadFigures(t *testing.T) {
	nan := driftFigure()
	nan.Panels[1].Series[0].Y[2] = math.NaN()
	inf := driftFigure()
	inf.Panels[0].Series[1].X[1] = math.Inf(1)
	for _, tc := range []struct {
		name string
		f    Figure
		want error
	}{
		{"no panel", Figure{}, ErrNoData},
		{"no series", Figure{Panels: []Panel{{Title: "empty"}}}, ErrNoData},
		{"no point", Figure{Panels: []Panel{{Series: []Series{{Name: "s"}}}}}, ErrNoData},
		{"NaN", nan, ErrBadValue},
		{"Inf", inf, ErrBadValue},
		{"lengths", Figure{Panels: []Panel{{Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}}}}, ErrBadValue},
		{"size", Figure{Width: 10, Panels: driftFigure().Panels}, ErrBadValue},
	} {
		var buf bytes.Buffer
		err := tc.f.WriteSVG(&buf)
		if !errors.Is(err, tc.want) || buf.Len() != 0 {
			t.Errorf("%s: WriteSVG = %v with %d bytes written; want %v and nothing", tc.name, err, buf.Len(), tc.want)
		}
	}
}

func TestCSV(t *testing.T) {
	in := "samples,rows,rss_bytes,auc,run\n0,0,1000,,a\n100,10,2000,0.7,a\n0,0,1500,,b\n200,5,2500,0.75,b\n300,7\n"
	tab, err := ReadTable(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tab.Series("x", "samples", "auc", "run")
	if err != nil || len(s) != 2 || s[0].Name != "a" || !slices.Equal(s[0].X, []float64{100}) || !slices.Equal(s[1].Y, []float64{0.75}) {
		t.Fatalf("auc by run: %+v, %v", s, err)
	}
	s, err = tab.Series("all", "samples", "rows", "")
	if err != nil || len(s) != 1 || s[0].Name != "all" || !slices.Equal(s[0].Y, []float64{0, 10, 0, 5, 7}) {
		t.Fatalf("rows: %+v, %v", s, err)
	}
	for _, tc := range []struct {
		in, y string
		want  error
	}{
		{"", "rows", ErrNoData},
		{"samples,rows\n", "rows", ErrNoData},
		{"samples,rows\n1,\n", "rows", ErrNoData},
		{"samples,rows\n1,2\n", "auc", ErrNoData},
		{"samples,rows\n1,NaN\n", "rows", ErrBadValue},
		{"samples,rows\n1,+Inf\n", "rows", ErrBadValue},
		{"samples,rows\n1,many\n", "rows", ErrBadValue},
		{"samples,rows\n1,2,3\n", "rows", ErrBadValue},
	} {
		tab, err := ReadTable(strings.NewReader(tc.in))
		if err == nil {
			_, err = tab.Series("s", "samples", tc.y, "")
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%q, column %s: %v, want %v", tc.in, tc.y, err, tc.want)
		}
	}
}

// TestSVGElement checks that the element for an HTML page is the document
// without its XML declaration.
func TestSVGElement(t *testing.T) {
	var doc, elem bytes.Buffer
	if err := driftFigure().WriteSVG(&doc); err != nil {
		t.Fatal(err)
	}
	if err := driftFigure().WriteSVGElement(&elem); err != nil {
		t.Fatal(err)
	}
	decl, rest, _ := strings.Cut(doc.String(), "\n")
	if !strings.HasPrefix(decl, "<?xml") || elem.String() != rest || !strings.HasPrefix(rest, "<svg ") {
		t.Fatalf("element %.60q is not the document %.60q without its declaration", elem.String(), doc.String())
	}
	if err := (Figure{}).WriteSVGElement(&elem); !errors.Is(err, ErrNoData) {
		t.Fatalf("an empty figure: %v, want ErrNoData", err)
	}
}
