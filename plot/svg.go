package plot

import (
	"bytes"
	"encoding/xml"
	"fmt"
)

// canvas accumulates SVG elements. Coordinates are in pixels from the top
// left, written with one decimal, which keeps files small and stable.
type canvas struct {
	buf bytes.Buffer
}

// newCanvas starts an SVG document of the given size on a white ground.
func newCanvas(width, height float64) *canvas {
	c := &canvas{}
	fmt.Fprintf(&c.buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&c.buf, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", width, height)
	return c
}

// line draws a segment.
func (c *canvas) line(x1, y1, x2, y2 float64, stroke string, width float64) {
	fmt.Fprintf(&c.buf, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"/>`+"\n", x1, y1, x2, y2, stroke, width)
}

// polyline joins points, given in pixels.
func (c *canvas) polyline(pts []Point, stroke string) {
	c.buf.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + stroke + `" points="`)
	for i, p := range pts {
		if i > 0 {
			c.buf.WriteByte(' ')
		}
		fmt.Fprintf(&c.buf, "%.1f,%.1f", p.X, p.Y)
	}
	c.buf.WriteString("\"/>\n")
}

// circle draws a filled marker.
func (c *canvas) circle(x, y, r float64, fill string) {
	fmt.Fprintf(&c.buf, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>`+"\n", x, y, r, fill)
}

// text writes s, escaped, anchored at x ("start", "middle" or "end"); a
// non-zero rotate turns it about its anchor, in degrees.
func (c *canvas) text(x, y float64, anchor string, rotate float64, s string) {
	fmt.Fprintf(&c.buf, `<text x="%.1f" y="%.1f" text-anchor="%s"`, x, y, anchor)
	if rotate != 0 {
		fmt.Fprintf(&c.buf, ` transform="rotate(%.0f %.1f %.1f)"`, rotate, x, y)
	}
	c.buf.WriteByte('>')
	xml.EscapeText(&c.buf, []byte(s))
	c.buf.WriteString("</text>\n")
}

// bytes ends the document and returns it.
func (c *canvas) bytes() []byte {
	c.buf.WriteString("</svg>\n")
	return c.buf.Bytes()
}
