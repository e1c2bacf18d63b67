package plot

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Errors of bad input; returned wrapped, with context.
var (
	// ErrNoData: nothing to draw (no panel, series or point).
	ErrNoData = errors.New("plot: no data")
	// ErrBadValue: a value that cannot be drawn (NaN, infinite, not a
	// number) or x and y columns of different lengths.
	ErrBadValue = errors.New("plot: bad value")
)

// Unit says how an axis labels its ticks.
type Unit int

const (
	// Number labels ticks with decimal suffixes: 500, 250K, 1.5M, 20M, 3G.
	Number Unit = iota
	// Bytes labels ticks with binary suffixes: 512 KiB, 1.5 GiB.
	Bytes
)

// Series is one line: its points (X[i], Y[i]), drawn in order.
type Series struct {
	Name string
	X, Y []float64
}

// Panel is one plot: axes and the series drawn on them.
type Panel struct {
	// Title is written above the panel. The default value is empty.
	Title string
	// XLabel and YLabel name the axes. The default values are empty.
	XLabel, YLabel string
	// XUnit and YUnit label the ticks. The default value is Number.
	XUnit, YUnit Unit
	Series       []Series
}

// Figure is panels stacked vertically.
type Figure struct {
	// Title is written at the top. The default value is empty.
	Title  string
	Panels []Panel
	// Width is the width of the SVG in pixels. The default value is 900.
	Width int
	// PanelHeight is the height of one panel in pixels. The default value
	// is 300.
	PanelHeight int
}

// Default sizes of a Figure.
const (
	DefaultWidth       = 900
	DefaultPanelHeight = 300
)

// EnsureDefaults fills zero sizes with their defaults.
func (f *Figure) EnsureDefaults() {
	if f.Width == 0 {
		f.Width = DefaultWidth
	}
	if f.PanelHeight == 0 {
		f.PanelHeight = DefaultPanelHeight
	}
}

// Validate reports every problem of f at once: ErrNoData and ErrBadValue,
// wrapped with the panel and series.
func (f *Figure) Validate() error {
	var errs []error
	if len(f.Panels) == 0 {
		errs = append(errs, fmt.Errorf("%w: the figure has no panel", ErrNoData))
	}
	if f.Width < 200 || f.PanelHeight < 100 || f.Width > 1<<14 || f.PanelHeight > 1<<14 {
		errs = append(errs, fmt.Errorf("%w: size %dx%d per panel (want 200..16384 by 100..16384)", ErrBadValue, f.Width, f.PanelHeight))
	}
	for i, p := range f.Panels {
		if len(p.Series) == 0 {
			errs = append(errs, fmt.Errorf("%w: panel %d (%q) has no series", ErrNoData, i, p.Title))
		}
		for _, s := range p.Series {
			if err := s.validate(); err != nil {
				errs = append(errs, fmt.Errorf("panel %d (%q): %w", i, p.Title, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *Series) validate() error {
	switch {
	case len(s.X) != len(s.Y):
		return fmt.Errorf("%w: series %q has %d x values and %d y values", ErrBadValue, s.Name, len(s.X), len(s.Y))
	case len(s.X) == 0:
		return fmt.Errorf("%w: series %q has no point", ErrNoData, s.Name)
	}
	for i := range s.X {
		if !finite(s.X[i]) || !finite(s.Y[i]) {
			return fmt.Errorf("%w: series %q point %d is (%v, %v)", ErrBadValue, s.Name, i, s.X[i], s.Y[i])
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// axis maps data values to [0, 1] and carries the ticks.
type axis struct {
	lo, hi float64   // the range, both ticks
	ticks  []float64 // from lo to hi
	labels []string
}

// newAxis returns an axis covering [vmin, vmax] (see the package's
// invariant 3), with about 5 ticks at 1, 2 or 5 times a power of ten of
// the display unit.
func newAxis(vmin, vmax float64, unit Unit) axis {
	switch {
	case vmin == vmax && vmin > 0:
		vmin = 0
	case vmin == vmax && vmin < 0:
		vmax = 0
	case vmin == vmax:
		vmax = 1
	case vmin >= 0 && vmin < vmax/2:
		vmin = 0
	}
	scale, suffix := display(math.Max(math.Abs(vmin), math.Abs(vmax)), unit)
	step := niceStep((vmax - vmin) / scale / 5)
	first, last := math.Floor(vmin/scale/step), math.Ceil(vmax/scale/step)
	if !(last-first >= 1 && last-first <= 20) { // extreme magnitudes: two ticks, at the ends
		return axis{lo: vmin, hi: vmax, ticks: []float64{vmin, vmax},
			labels: []string{strconv.FormatFloat(vmin, 'g', 4, 64), strconv.FormatFloat(vmax, 'g', 4, 64)}}
	}
	decimals := max(-int(math.Floor(math.Log10(step))), 0)
	a := axis{lo: first * step * scale, hi: last * step * scale}
	for i := first; i <= last; i++ {
		a.ticks = append(a.ticks, i*step*scale)
		a.labels = append(a.labels, tickLabel(i*step, decimals, suffix))
	}
	return a
}

// pos maps v to [0, 1] along the axis.
func (a *axis) pos(v float64) float64 { return (v - a.lo) / (a.hi - a.lo) }

// display returns the unit ticks are written in for values up to m: the
// scale and its suffix.
func display(m float64, unit Unit) (float64, string) {
	if unit == Bytes {
		suffixes := []string{" B", " KiB", " MiB", " GiB", " TiB", " PiB"}
		scale := 1.0
		k := 0
		for ; k < len(suffixes)-1 && m >= 1024*scale; k++ {
			scale *= 1024
		}
		return scale, suffixes[k]
	}
	switch {
	case m >= 1e12:
		return 1e12, "T"
	case m >= 1e9:
		return 1e9, "G"
	case m >= 1e6:
		return 1e6, "M"
	case m >= 1e3:
		return 1e3, "K"
	}
	return 1, ""
}

// niceStep returns the smallest of 1, 2, 5 times a power of ten that is
// at least raw.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel writes v (in display units) with the given decimals, trailing
// zeros trimmed, and the suffix; 0 is "0".
func tickLabel(v float64, decimals int, suffix string) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "0" || s == "-0" {
		return "0"
	}
	return s + suffix
}
