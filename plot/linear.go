package plot

import (
	"fmt"
	"math"
	"strconv"
)

// linearAxis maps values from 0 to hi onto [0, 1], with a tick every step.
// hi is a whole number of steps, so the last tick closes the axis.
type linearAxis struct {
	hi, step float64
}

// newLinearAxis returns an axis from zero that holds every value in vs,
// with about five ticks at round values (1, 2 or 5 times a power of ten).
// Values must be finite and not negative; when all are zero the axis
// still spans something, so that zero-length bars have a scale.
func newLinearAxis(vs []float64) (linearAxis, error) {
	if len(vs) == 0 {
		return linearAxis{}, fmt.Errorf("plot: no values to place on an axis")
	}
	top := 0.0
	for _, v := range vs {
		if !(v >= 0) || math.IsInf(v, 0) {
			return linearAxis{}, fmt.Errorf("plot: %v has no place on an axis from zero", v)
		}
		top = max(top, v)
	}
	if top == 0 {
		top = 1
	}
	step := roundStep(top / 5)
	// The tolerance keeps a value that is a whole number of steps, give or
	// take rounding, from adding an empty step.
	return linearAxis{hi: math.Ceil(top/step-1e-9) * step, step: step}, nil
}

// roundStep returns the smallest of 1, 2, 5 and 10 times a power of ten
// that is at least raw, which must be positive.
func roundStep(raw float64) float64 {
	unit := math.Pow10(int(math.Floor(math.Log10(raw))))
	for _, m := range []float64{1, 2, 5} {
		if m*unit >= raw {
			return m * unit
		}
	}
	return 10 * unit
}

// pos returns where v falls on the axis, 0 at zero and 1 at hi.
func (a linearAxis) pos(v float64) float64 { return v / a.hi }

// ticks returns the values of the axis's ticks, zero to hi. They are
// computed as multiples of the step, not by repeated addition, which would
// accumulate rounding.
func (a linearAxis) ticks() []float64 {
	n := int(math.Round(a.hi / a.step))
	out := make([]float64, n+1)
	for i := range out {
		out[i] = float64(i) * a.step
	}
	return out
}

// label writes a tick's value with as many decimals as the step needs,
// so that 0.1 × 3 prints as 0.3.
func (a linearAxis) label(v float64) string {
	decimals := max(0, -int(math.Floor(math.Log10(a.step))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}
