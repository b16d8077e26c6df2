package plot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// logAxis maps values onto [0, 1] logarithmically, over whole decades:
// from 10^lo to 10^hi.
type logAxis struct {
	lo, hi int
}

// newLogAxis returns the smallest run of whole decades, one at least, that
// holds every value in vs. Values must be finite and positive.
func newLogAxis(vs []float64) (logAxis, error) {
	if len(vs) == 0 {
		return logAxis{}, fmt.Errorf("plot: no values to place on an axis")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if !(v > 0) || math.IsInf(v, 0) {
			return logAxis{}, fmt.Errorf("plot: %v has no place on a logarithmic axis", v)
		}
		lo, hi = min(lo, math.Log10(v)), max(hi, math.Log10(v))
	}
	a := logAxis{lo: int(math.Floor(lo)), hi: int(math.Ceil(hi))}
	if a.hi == a.lo {
		a.hi++
	}
	return a, nil
}

// pos returns where v falls on the axis, 0 at 10^lo and 1 at 10^hi.
func (a logAxis) pos(v float64) float64 {
	return (math.Log10(v) - float64(a.lo)) / float64(a.hi-a.lo)
}

// decades returns the exponents of the axis's ticks, lo to hi.
func (a logAxis) decades() []int {
	var out []int
	for k := a.lo; k <= a.hi; k++ {
		out = append(out, k)
	}
	return out
}

// decadeLabel writes 10^k as people read it: plainly from 0.001 to 1000,
// "10⁴" and "10⁻⁴" beyond, where zeros are hard to count.
func decadeLabel(k int) string {
	if k >= -3 && k <= 3 {
		return strconv.FormatFloat(math.Pow10(k), 'f', -1, 64)
	}
	return "10" + superscript(k)
}

// superscript writes k in superscript digits.
func superscript(k int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	var b strings.Builder
	for _, r := range strconv.Itoa(k) {
		if r == '-' {
			b.WriteRune('⁻')
			continue
		}
		b.WriteRune([]rune(digits)[r-'0'])
	}
	return b.String()
}
