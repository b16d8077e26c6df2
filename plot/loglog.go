package plot

import (
	"fmt"
	"math"
)

// LogLog is a line chart on logarithmic axes: one line per series, with a
// marker on each point, decade grid lines, axis labels and a legend.
type LogLog struct {
	// Title goes above the plot, the labels along the axes.
	Title  string
	XLabel string
	YLabel string
	// Series are drawn in order, each in a colour of its own; those
	// without points are left out, legend included.
	Series []Series
}

// The layout, in pixels: the plot area is inset by the margins, and the
// legend takes a column on the right.
const (
	width        = 760
	height       = 480
	marginLeft   = 70
	marginTop    = 40
	marginBottom = 60
	legendWidth  = 200
	legendRow    = 20
	markerRadius = 3
)

// frame is where the plot area lies on the canvas, and its axes.
type frame struct {
	left, top, right, bottom float64
	x, y                     logAxis
}

func (f frame) px(p Point) Point {
	return Point{
		X: f.left + f.x.pos(p.X)*(f.right-f.left),
		Y: f.bottom - f.y.pos(p.Y)*(f.bottom-f.top),
	}
}

// SVG draws the chart. It fails when no series has a point, or when a
// point has a coordinate that a logarithmic axis cannot place: zero,
// negative, infinite or NaN.
func (c LogLog) SVG() ([]byte, error) {
	f, err := c.frame()
	if err != nil {
		return nil, err
	}
	cv := newCanvas(width, height)
	c.drawAxes(cv, f)
	drawn := 0
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		drawSeries(cv, f, s, colour(i))
		drawLegendEntry(cv, f, drawn, s.Name, colour(i))
		drawn++
	}
	return cv.bytes(), nil
}

// frame fits the axes to every point of every series.
func (c LogLog) frame() (frame, error) {
	var xs, ys []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	x, err := newLogAxis(xs)
	if err != nil {
		return frame{}, fmt.Errorf("x axis: %w", err)
	}
	y, err := newLogAxis(ys)
	if err != nil {
		return frame{}, fmt.Errorf("y axis: %w", err)
	}
	return frame{left: marginLeft, top: marginTop, right: width - legendWidth, bottom: height - marginBottom, x: x, y: y}, nil
}

// drawAxes draws the title, the grid, the ticks' labels and the axes'.
func (c LogLog) drawAxes(cv *canvas, f frame) {
	const grid, ink = "#dddddd", "#333333"
	cv.text((f.left+f.right)/2, f.top/2+6, "middle", 0, c.Title)
	for _, k := range f.x.decades() {
		x := f.left + f.x.pos(math.Pow10(k))*(f.right-f.left)
		cv.line(x, f.top, x, f.bottom, grid, 1)
		cv.text(x, f.bottom+18, "middle", 0, decadeLabel(k))
	}
	for _, k := range f.y.decades() {
		y := f.bottom - f.y.pos(math.Pow10(k))*(f.bottom-f.top)
		cv.line(f.left, y, f.right, y, grid, 1)
		cv.text(f.left-8, y+4, "end", 0, decadeLabel(k))
	}
	cv.line(f.left, f.bottom, f.right, f.bottom, ink, 1)
	cv.line(f.left, f.top, f.left, f.bottom, ink, 1)
	cv.text((f.left+f.right)/2, height-18, "middle", 0, c.XLabel)
	cv.text(18, (f.top+f.bottom)/2, "middle", -90, c.YLabel)
}

// drawSeries draws a series' line and markers.
func drawSeries(cv *canvas, f frame, s Series, stroke string) {
	pts := make([]Point, len(s.Points))
	for i, p := range s.Points {
		pts[i] = f.px(p)
	}
	cv.polyline(pts, stroke)
	for _, p := range pts {
		cv.circle(p.X, p.Y, markerRadius, stroke)
	}
}

// drawLegendEntry draws the row-th entry of the legend, right of the plot.
func drawLegendEntry(cv *canvas, f frame, row int, name, stroke string) {
	x, y := f.right+20, f.top+float64(row)*legendRow
	cv.line(x, y, x+24, y, stroke, 2)
	cv.circle(x+12, y, markerRadius, stroke)
	cv.text(x+32, y+4, "start", 0, name)
}
