// Package plot draws charts as SVG, written by hand: no dependency, small
// files, and the same bytes for the same chart on every machine, so that
// golden files can check them.
//
// A chart is a value (LogLog today) whose SVG method lays it out on a
// canvas, the thin layer over SVG elements that other kinds of chart
// share with it, together with the axes and the palette.
package plot

// Point is a point of a series, in data coordinates.
type Point struct{ X, Y float64 }

// Series is a named line of a chart.
type Series struct {
	// Name is the series' entry in the legend.
	Name string
	// Points are joined in order.
	Points []Point
}

// palette is the Okabe–Ito set of colours, told apart by people with
// colour-blindness too, with grey for its yellow, which white paper
// swallows. Series take them in turn.
var palette = []string{"#000000", "#e69f00", "#56b4e9", "#009e73", "#0072b2", "#d55e00", "#cc79a7", "#999999"}

// colour returns the colour of the i-th series.
func colour(i int) string { return palette[i%len(palette)] }
