// Package plot draws line plots as SVG, without dependencies: the figures
// of the benchmark scripts (bench/drift.sh: table rows and RSS over
// samples, one series per run) and the curves of the scheduler's status
// page.
//
// A Figure is one or more Panels stacked vertically, sharing the width;
// a Panel has an x and a y axis and one or more Series, each a polyline
// of (x, y) points. Usage:
//
//  1. Build the series, by hand or from CSV files: ReadTable parses a CSV
//     file with a header, and Table.Series picks an x and a y column,
//     split into one series per value of a label column if one is given.
//  2. Put them in Panels, with the axes' units (Number: 1K, 20M; Bytes:
//     KiB, MiB, GiB), and the panels in a Figure.
//  3. Call Figure.WriteSVG, or Figure.WriteSVGElement for an <svg>
//     element inside an HTML page (the scheduler's status page).
//
// Invariants of the output:
//
//  1. It is well-formed XML (an SVG 1.1 document), with every text escaped.
//  2. Each panel has one <path class="series"> per series, in order, with
//     the series' name in its data-series attribute, and a legend entry per
//     series; a series has the same colour in every panel.
//  3. Each axis's range covers its data: it runs from a tick at or below
//     the smallest value to a tick at or above the largest (from 0 when the
//     values are not negative and the smallest is below half the largest),
//     so every point is drawn inside the panel's plot area.
//
// Bad input is an error, never a panic: a figure without panels, a panel
// without series, a series without points (ErrNoData); a NaN or infinite
// value, or x and y of different lengths (ErrBadValue); a CSV cell that is
// not a number (ErrBadValue, naming line and column). Empty CSV cells are
// skipped: a run that has no AUC yet leaves the cell empty.
//
// # Files
//
//   - plot.go: Figure, Panel and Series with EnsureDefaults and Validate, and the axes' scales and ticks.
//   - svg.go: Figure.WriteSVG and WriteSVGElement, the SVG drawing.
//   - csv.go: Table, a CSV file read by ReadTable, and Table.Series, its columns as series.
package plot
