package plot

import (
	"flag"
	"math"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestLogLogGolden(t *testing.T) {
	c := LogLog{
		Title:  "a & b <chart>",
		XLabel: "x",
		YLabel: "y",
		Series: []Series{
			{Name: "linear", Points: []Point{{10, 0.01}, {100, 0.1}, {1000, 1}}},
			{Name: "empty"},
			{Name: "steep", Points: []Point{{10, 1}, {1000, 20000}}},
		},
	}
	got, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "loglog.svg", got)
}

func TestLogLogContents(t *testing.T) {
	c := LogLog{Series: []Series{
		{Name: "drawn", Points: []Point{{1, 1}, {10, 10}}},
		{Name: "left out"},
	}}
	got, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		want int
	}{
		{"<polyline", 1},
		{"<circle", 3}, // two points, one legend marker
		{">drawn</text>", 1},
		{">left out</text>", 0},
		{"</svg>", 1},
	} {
		if n := strings.Count(string(got), tc.what); n != tc.want {
			t.Errorf("%q appears %d times, want %d", tc.what, n, tc.want)
		}
	}
}

func TestLogLogErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series []Series
		want   string
	}{
		{"no series", nil, "x axis: plot: no values"},
		{"no points", []Series{{Name: "a"}}, "x axis: plot: no values"},
		{"zero x", []Series{{Points: []Point{{0, 1}}}}, "x axis: plot: 0 has no place"},
		{"negative y", []Series{{Points: []Point{{1, -1}}}}, "y axis: plot: -1 has no place"},
		{"NaN", []Series{{Points: []Point{{1, math.NaN()}}}}, "y axis: plot: NaN has no place"},
		{"infinity", []Series{{Points: []Point{{math.Inf(1), 1}}}}, "x axis: plot: +Inf has no place"},
	} {
		_, err := LogLog{Series: tc.series}.SVG()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLogAxis(t *testing.T) {
	for _, tc := range []struct {
		vs     []float64
		lo, hi int
	}{
		{[]float64{10, 1000}, 1, 3},
		{[]float64{15, 999}, 1, 3},
		{[]float64{0.002, 5}, -3, 1},
		{[]float64{100}, 2, 3},
		{[]float64{150}, 2, 3},
	} {
		a, err := newLogAxis(tc.vs)
		if err != nil {
			t.Fatal(err)
		}
		if a.lo != tc.lo || a.hi != tc.hi {
			t.Errorf("axis of %v: 10^%d to 10^%d, want 10^%d to 10^%d", tc.vs, a.lo, a.hi, tc.lo, tc.hi)
		}
		if p := a.pos(math.Pow10(tc.lo)); p != 0 {
			t.Errorf("axis of %v: 10^%d at %v, want 0", tc.vs, tc.lo, p)
		}
		if p := a.pos(math.Pow10(tc.hi)); math.Abs(p-1) > 1e-12 {
			t.Errorf("axis of %v: 10^%d at %v, want 1", tc.vs, tc.hi, p)
		}
	}
}

func TestDecadeLabel(t *testing.T) {
	for k, want := range map[int]string{
		-5: "10⁻⁵", -3: "0.001", 0: "1", 2: "100", 3: "1000", 4: "10⁴", 12: "10¹²",
	} {
		if got := decadeLabel(k); got != want {
			t.Errorf("decadeLabel(%d) = %q, want %q", k, got, want)
		}
	}
}

func TestColourCycles(t *testing.T) {
	if colour(0) == colour(1) || colour(0) != colour(len(palette)) {
		t.Errorf("colours %s %s %s: want the palette in turn, again from the start", colour(0), colour(1), colour(len(palette)))
	}
}
