package plot

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestBarsGolden(t *testing.T) {
	c := Bars{
		Title:  "a & b <chart>",
		XLabel: "privilege",
		Bars: []Bar{
			{Label: "/usr/lib/x86_64-linux-gnu/libc.so.6", Value: 53},
			{Label: "/usr/lib/x86_64-linux-gnu/a-very-long-directory-name/libexample.so.1", Value: 20},
			{Label: "empty", Value: 0},
			{Label: "seccomp (union)", Value: 119, Emphasis: true},
		},
	}
	got, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "bars.svg", got)
}

func TestBarsContents(t *testing.T) {
	c := Bars{Bars: []Bar{{Label: "one", Value: 2}, {Label: "two", Value: 10, Emphasis: true}}}
	got, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		want int
	}{
		{"<rect ", 3}, // the ground and two bars
		{`fill="` + barColour + `"`, 1},
		{`fill="` + emphasisColour + `"`, 1},
		{">one</text>", 1},
		{">two</text>", 1},
		{">10</text>", 2}, // the value of "two" and the axis's last tick
		{"</svg>", 1},
	} {
		if n := strings.Count(string(got), tc.what); n != tc.want {
			t.Errorf("%q appears %d times, want %d", tc.what, n, tc.want)
		}
	}
}

func TestBarsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		bars []Bar
		want string
	}{
		{"no bars", nil, "x axis: plot: no values"},
		{"negative", []Bar{{Value: -1}}, "x axis: plot: -1 has no place"},
		{"NaN", []Bar{{Value: math.NaN()}}, "x axis: plot: NaN has no place"},
		{"infinity", []Bar{{Value: math.Inf(1)}}, "x axis: plot: +Inf has no place"},
	} {
		_, err := Bars{Bars: tc.bars}.SVG()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The expected axes are worked out by hand: a fifth of the largest value,
// rounded up to 1, 2 or 5 times a power of ten, is the step; the axis ends
// at the first multiple of the step that holds every value.
func TestLinearAxis(t *testing.T) {
	for _, tc := range []struct {
		vs     []float64
		step   float64
		ticks  []string
		reason string
	}{
		{[]float64{53, 119}, 50, []string{"0", "50", "100", "150"}, "119/5 = 23.8, rounded up to 50"},
		{[]float64{10}, 2, []string{"0", "2", "4", "6", "8", "10"}, "10/5 = 2 is round already"},
		{[]float64{100}, 20, []string{"0", "20", "40", "60", "80", "100"}, "100 is a whole number of steps: no empty step"},
		{[]float64{7, 12}, 5, []string{"0", "5", "10", "15"}, "12/5 = 2.4, rounded up to 5"},
		{[]float64{0.3}, 0.1, []string{"0.0", "0.1", "0.2", "0.3"}, "0.3/5 = 0.06, rounded up to 0.1"},
		{[]float64{0, 0}, 0.2, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}, "all zero: the axis spans 1"},
	} {
		a, err := newLinearAxis(tc.vs)
		if err != nil {
			t.Fatal(err)
		}
		var ticks []string
		for _, v := range a.ticks() {
			ticks = append(ticks, a.label(v))
		}
		if math.Abs(a.step-tc.step) > 1e-12 || !slices.Equal(ticks, tc.ticks) {
			t.Errorf("axis of %v (%s): step %v, ticks %v; want step %v, ticks %v", tc.vs, tc.reason, a.step, ticks, tc.step, tc.ticks)
		}
		if p := a.pos(a.hi); p != 1 {
			t.Errorf("axis of %v: end at %v, want 1", tc.vs, p)
		}
	}
}

func TestShorten(t *testing.T) {
	long := "/usr/lib/x86_64-linux-gnu/a-very-long-directory-name/libexample.so.1"
	for _, tc := range []struct{ in, want string }{
		{"libc.so.6", "libc.so.6"},
		{strings.Repeat("a", maxLabelRunes), strings.Repeat("a", maxLabelRunes)},
		{long, "…" + long[len(long)-maxLabelRunes+1:]},
	} {
		got := shorten(tc.in)
		if got != tc.want || len([]rune(got)) > maxLabelRunes {
			t.Errorf("shorten(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
