package plot

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// palette colours the series, by order of first appearance in the figure.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Margins of a panel's plot area, in pixels.
const (
	marginLeft   = 80
	marginRight  = 24
	marginTop    = 28
	marginBottom = 46
	figureTitleH = 30
)

// WriteSVG writes f (its zero sizes taken as the defaults) as an SVG
// document. It returns Validate's error without writing anything when f
// cannot be drawn.
func (f Figure) WriteSVG(w io.Writer) error { return f.write(w, true) }

// WriteSVGElement writes f as WriteSVG does, without the XML declaration:
// an <svg> element to put inside an HTML page.
func (f Figure) WriteSVGElement(w io.Writer) error { return f.write(w, false) }

// write writes f, with the XML declaration when doc.
func (f Figure) write(w io.Writer, doc bool) error {
	f.EnsureDefaults()
	if err := f.Validate(); err != nil {
		return err
	}
	top := 8
	if f.Title != "" {
		top = figureTitleH
	}
	height := top + len(f.Panels)*f.PanelHeight
	var b strings.Builder
	if doc {
		fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		f.Width, height, f.Width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", f.Width, height)
	if f.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", f.Width/2, esc(f.Title))
	}
	colors := map[string]string{}
	for _, p := range f.Panels {
		for _, s := range p.Series {
			if _, ok := colors[s.Name]; !ok {
				colors[s.Name] = palette[len(colors)%len(palette)]
			}
		}
	}
	for i := range f.Panels {
		pw := panelWriter{b: &b, p: &f.Panels[i], colors: colors,
			w: float64(f.Width - marginLeft - marginRight), h: float64(f.PanelHeight - marginTop - marginBottom)}
		fmt.Fprintf(&b, `<g class="panel" transform="translate(0,%d)">`+"\n", top+i*f.PanelHeight)
		pw.write(f.PanelHeight)
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("plot: write svg: %w", err)
	}
	return nil
}

// panelWriter draws one panel, in the panel's own coordinates: its plot
// area starts at (marginLeft, marginTop) and is w by h pixels.
type panelWriter struct {
	b      *strings.Builder
	p      *Panel
	colors map[string]string
	w, h   float64
	x, y   axis
}

func (pw *panelWriter) write(panelHeight int) {
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range pw.p.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			ymin, ymax = math.Min(ymin, s.Y[i]), math.Max(ymax, s.Y[i])
		}
	}
	pw.x, pw.y = newAxis(xmin, xmax, pw.p.XUnit), newAxis(ymin, ymax, pw.p.YUnit)
	b := pw.b
	if pw.p.Title != "" {
		fmt.Fprintf(b, `<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>`+"\n", marginLeft, esc(pw.p.Title))
	}
	pw.grid()
	fmt.Fprintf(b, `<rect class="plot-area" x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n",
		marginLeft, marginTop, pw.w, pw.h)
	if pw.p.XLabel != "" {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginLeft+pw.w/2, panelHeight-6, esc(pw.p.XLabel))
	}
	if pw.p.YLabel != "" {
		fmt.Fprintf(b, `<text transform="translate(14,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginTop+pw.h/2, esc(pw.p.YLabel))
	}
	for _, s := range pw.p.Series {
		pw.series(&s)
	}
	pw.legend()
}

// px and py map data to the panel's pixels.
func (pw *panelWriter) px(v float64) float64 { return marginLeft + pw.x.pos(v)*pw.w }
func (pw *panelWriter) py(v float64) float64 { return marginTop + (1-pw.y.pos(v))*pw.h }

// grid draws the ticks, their labels and light grid lines.
func (pw *panelWriter) grid() {
	b := pw.b
	bottom := marginTop + pw.h
	for i, t := range pw.x.ticks {
		x := pw.px(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, x, marginTop, x, bottom)
		fmt.Fprintf(b, `<text class="xtick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+16, esc(pw.x.labels[i]))
	}
	for i, t := range pw.y.ticks {
		y := pw.py(t)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`, marginLeft, y, marginLeft+pw.w, y)
		fmt.Fprintf(b, `<text class="ytick" x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginLeft-6, y+4, esc(pw.y.labels[i]))
	}
}

// series draws one series as a path.
func (pw *panelWriter) series(s *Series) {
	b := pw.b
	fmt.Fprintf(b, `<path class="series" data-series="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round" stroke-linecap="round" d="`,
		esc(s.Name), pw.colors[s.Name])
	for i := range s.X {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(b, "%s%.1f %.1f ", cmd, pw.px(s.X[i]), pw.py(s.Y[i]))
	}
	if len(s.X) == 1 {
		b.WriteString("l0 0") // a dot: round caps draw a zero-length line
	}
	b.WriteString("\"/>\n")
}

// legend draws the series' names at the top left of the plot area.
func (pw *panelWriter) legend() {
	b := pw.b
	longest := 0
	for _, s := range pw.p.Series {
		longest = max(longest, len([]rune(s.Name)))
	}
	x0, y0 := marginLeft+8, marginTop+8
	fmt.Fprintf(b, `<g class="legend"><rect x="%d" y="%d" width="%d" height="%d" fill="white" fill-opacity="0.85" stroke="#bbb"/>`+"\n",
		x0, y0, 40+7*longest, 6+16*len(pw.p.Series))
	for i, s := range pw.p.Series {
		y := y0 + 14 + 16*i
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2.5"/>`, x0+6, y-4, x0+26, y-4, pw.colors[s.Name])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x0+32, y, esc(s.Name))
	}
	b.WriteString("</g>\n")
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
