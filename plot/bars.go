package plot

import (
	"fmt"
	"strconv"
)

// Bar is one bar of a bar chart.
type Bar struct {
	// Label names the bar, left of it.
	Label string
	// Value is the bar's length; it must be finite and not negative.
	Value float64
	// Emphasis draws the bar in a second colour, to set it apart from
	// the others (a total, a baseline).
	Emphasis bool
}

// Bars is a horizontal bar chart: one row per bar, labelled on the left
// with its value written at its end, lengths on a linear axis from zero.
// Rows run horizontally so that long labels, such as library paths, stay
// readable.
type Bars struct {
	// Title goes above the chart, XLabel under its axis.
	Title  string
	XLabel string
	// Bars are drawn top to bottom, in order.
	Bars []Bar
}

// The layout of a bar chart, in pixels; the width is LogLog's. Label
// widths are estimated, since the canvas cannot measure text: charWidth is
// a generous average for 12-pixel sans-serif.
const (
	rowHeight     = 26
	barThickness  = 18
	charWidth     = 7
	maxLabelRunes = 40
	labelPad      = 8
	valueRoom     = 70
)

// barColour and emphasisColour are the palette's blue and orange, apart
// for the colour-blind too.
var barColour, emphasisColour = colour(4), colour(1)

// barFrame is where the bars lie on the canvas, and their axis.
type barFrame struct {
	left, top, right, bottom float64
	x                        linearAxis
}

// SVG draws the chart. It fails when there is no bar, or when a value
// is negative, infinite or NaN.
func (c Bars) SVG() ([]byte, error) {
	f, err := c.frame()
	if err != nil {
		return nil, err
	}
	cv := newCanvas(width, f.bottom+marginBottom)
	c.drawAxis(cv, f)
	for i, b := range c.Bars {
		drawBar(cv, f, i, b)
	}
	cv.line(f.left, f.top, f.left, f.bottom, "#333333", 1)
	return cv.bytes(), nil
}

// frame fits the label column to the longest label and the axis to the
// longest bar.
func (c Bars) frame() (barFrame, error) {
	vs := make([]float64, len(c.Bars))
	longest := 0
	for i, b := range c.Bars {
		vs[i] = b.Value
		longest = max(longest, len([]rune(shorten(b.Label))))
	}
	x, err := newLinearAxis(vs)
	if err != nil {
		return barFrame{}, fmt.Errorf("x axis: %w", err)
	}
	left := float64(2*labelPad + longest*charWidth)
	return barFrame{
		left:   left,
		top:    marginTop,
		right:  width - valueRoom,
		bottom: marginTop + float64(len(c.Bars)*rowHeight),
		x:      x,
	}, nil
}

// drawAxis draws the title, the grid, the ticks' labels and the axis's.
func (c Bars) drawAxis(cv *canvas, f barFrame) {
	const grid, ink = "#dddddd", "#333333"
	// The title is centred on the canvas, not the plot area, which a wide
	// label column pushes right.
	cv.text(width/2, f.top/2+6, "middle", 0, c.Title)
	for _, v := range f.x.ticks() {
		x := f.left + f.x.pos(v)*(f.right-f.left)
		cv.line(x, f.top, x, f.bottom, grid, 1)
		cv.text(x, f.bottom+18, "middle", 0, f.x.label(v))
	}
	cv.line(f.left, f.bottom, f.right, f.bottom, ink, 1)
	cv.text((f.left+f.right)/2, f.bottom+42, "middle", 0, c.XLabel)
}

// drawBar draws the bar of the given row with its label and value.
func drawBar(cv *canvas, f barFrame, row int, b Bar) {
	fill := barColour
	if b.Emphasis {
		fill = emphasisColour
	}
	mid := f.top + (float64(row)+0.5)*rowHeight
	end := f.left + f.x.pos(b.Value)*(f.right-f.left)
	cv.rect(f.left, mid-barThickness/2, end-f.left, barThickness, fill)
	cv.text(f.left-labelPad, mid+4, "end", 0, shorten(b.Label))
	cv.text(end+4, mid+4, "start", 0, strconv.FormatFloat(b.Value, 'f', -1, 64))
}

// shorten keeps the end of a label too long for the label column, where a
// path keeps its file name, and marks the cut.
func shorten(label string) string {
	r := []rune(label)
	if len(r) <= maxLabelRunes {
		return label
	}
	return "…" + string(r[len(r)-maxLabelRunes+1:])
}

// rect draws a filled rectangle from its top left corner.
func (c *canvas) rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&c.buf, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, w, h, fill)
}
