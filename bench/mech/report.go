package mech

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/syscell/syscell/plot"
)

// Report is what Run measured.
type Report struct {
	// Runs is how many payloads measured each point.
	Runs int `json:"runs"`
	// Iterations are the numbers of getpid calls timed.
	Iterations []int `json:"iterations"`
	// Series has one entry per mechanism measured, in the order asked.
	Series []Series `json:"mechanisms"`
}

// Series is what one mechanism measured at each number of calls.
type Series struct {
	Mechanism Mechanism `json:"mechanism"`
	// Description is the mechanism's, for readers of the JSON.
	Description string `json:"description"`
	// Skipped says why the mechanism was not measured, when it was not.
	Skipped string `json:"skipped,omitempty"`
	// Points has one entry per number of calls, in the order of
	// Report.Iterations.
	Points []Point `json:"points"`
}

// Point is what one mechanism measured at one number of calls.
type Point struct {
	// Iterations is the number of getpid calls of each payload.
	Iterations int `json:"iterations"`
	// Skipped says why this point was not measured, when it was not.
	Skipped string `json:"skipped,omitempty"`
	// Runs has one sample per payload.
	Runs []Sample `json:"runs,omitempty"`
	// MeanNs and MedianNs summarize the loops' times, in nanoseconds.
	MeanNs   float64 `json:"mean_ns,omitempty"`
	MedianNs float64 `json:"median_ns,omitempty"`
	// NsPerCall is MedianNs over the number of calls.
	NsPerCall float64 `json:"ns_per_call,omitempty"`
	// VsSeccomp is MeanNs over the mean of the cacheable seccomp filter at
	// the same number of calls, as seccomp-benchmark compares means; nil
	// when that was not measured.
	VsSeccomp *float64 `json:"vs_seccomp,omitempty"`
}

// newReport lays out the report of opts, the points of slow mechanisms
// beyond opts.SlowLimit marked as skipped.
func newReport(opts Options) Report {
	r := Report{Runs: opts.Runs, Iterations: opts.Iterations}
	for _, m := range opts.Mechanisms {
		s := Series{Mechanism: m, Description: m.Description()}
		for _, n := range opts.Iterations {
			p := Point{Iterations: n}
			if specs[m].slow && opts.SlowLimit > 0 && n > opts.SlowLimit {
				p.Skipped = fmt.Sprintf("slow mechanisms stop at %d calls", opts.SlowLimit)
			}
			s.Points = append(s.Points, p)
		}
		r.Series = append(r.Series, s)
	}
	return r
}

// summarize computes the statistics of every measured point.
func (r *Report) summarize() {
	for i := range r.Series {
		for j := range r.Series[i].Points {
			r.Series[i].Points[j].summarize()
		}
	}
	base := r.series(Seccomp)
	if base == nil {
		return
	}
	for i := range r.Series {
		for j := range r.Series[i].Points {
			p, b := &r.Series[i].Points[j], base.Points[j]
			if len(p.Runs) > 0 && len(b.Runs) > 0 {
				ratio := p.MeanNs / b.MeanNs
				p.VsSeccomp = &ratio
			}
		}
	}
}

// series returns the series of m, nil when m was not asked for.
func (r *Report) series(m Mechanism) *Series {
	for i := range r.Series {
		if r.Series[i].Mechanism == m {
			return &r.Series[i]
		}
	}
	return nil
}

func (p *Point) summarize() {
	if len(p.Runs) == 0 {
		return
	}
	ns := make([]float64, len(p.Runs))
	for i, s := range p.Runs {
		ns[i] = float64(s.LoopNs)
	}
	p.MeanNs = mean(ns)
	p.MedianNs = median(ns)
	p.NsPerCall = p.MedianNs / float64(p.Iterations)
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("mech: write report: %w", err)
	}
	return nil
}

// WriteTable writes r as seccomp-benchmark's table, in Markdown: one row
// per number of calls and mechanism, each run's time in milliseconds, the
// mean and the median, the median per call, and the mean against the
// cacheable seccomp filter's. A legend of the mechanisms, and why any was
// skipped, follow.
func (r Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "getpid in a loop: wall time of the loop in ms, measured in the payload, %d runs;\n", r.Runs)
	b.WriteString("ns/call is the median over the calls, vs seccomp the mean over seccomp's mean\n\n")
	writeMarkdown(&b, r.header(), r.rows())
	b.WriteString("\n")
	for _, s := range r.Series {
		fmt.Fprintf(&b, "%s: %s\n", s.Mechanism, s.Description)
	}
	for _, s := range r.Series {
		s.writeSkips(&b)
	}
	r.writeFloorRatios(&b)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("mech: write report: %w", err)
	}
	return nil
}

// FloorRatios are, by number of calls, the median time of a call that
// mechanism sup decides (Supervised, SupervisedProc) over the
// notification floor's (user-notif, a supervisor that answers at once),
// where both were measured.
func (r Report) FloorRatios(sup Mechanism) map[int]float64 {
	s, floor := r.series(sup), r.series(UserNotif)
	if s == nil || floor == nil {
		return nil
	}
	out := map[int]float64{}
	for i, p := range s.Points {
		if f := floor.Points[i]; p.MedianNs > 0 && f.MedianNs > 0 {
			out[p.Iterations] = p.MedianNs / f.MedianNs
		}
	}
	return out
}

// writeFloorRatios says what the supervisor adds to the notification's
// round trip.
func (r Report) writeFloorRatios(b *strings.Builder) {
	for _, sup := range []Mechanism{Supervised, SupervisedProc} {
		ratios := r.FloorRatios(sup)
		for _, n := range r.Iterations {
			if v, ok := ratios[n]; ok {
				fmt.Fprintf(b, "%s / user-notif at %d calls: %.2f (the supervisor's cost over the notification floor)\n", sup, n, v)
			}
		}
	}
}

// writeSkips says why the series, or some of its points, were not measured.
func (s Series) writeSkips(b *strings.Builder) {
	if s.Skipped != "" {
		fmt.Fprintf(b, "%s: SKIPPED: %s\n", s.Mechanism, s.Skipped)
		return
	}
	var ns []string
	reason := ""
	for _, p := range s.Points {
		if p.Skipped != "" {
			ns, reason = append(ns, strconv.Itoa(p.Iterations)), p.Skipped
		}
	}
	if len(ns) > 0 {
		fmt.Fprintf(b, "%s: not run at %s calls: %s\n", s.Mechanism, strings.Join(ns, ", "), reason)
	}
}

func (r Report) header() []string {
	h := []string{"iter.", "mechanism"}
	for i := range r.Runs {
		h = append(h, fmt.Sprintf("run %d", i+1))
	}
	return append(h, "mean", "median", "ns/call", "vs seccomp")
}

// rows has a row per number of calls and mechanism; "-" stands for what
// was not measured.
func (r Report) rows() [][]string {
	var rows [][]string
	for i, n := range r.Iterations {
		for _, s := range r.Series {
			p := s.Points[i]
			row := []string{strconv.Itoa(n), string(s.Mechanism)}
			for run := range r.Runs {
				row = append(row, p.runMs(run))
			}
			row = append(row, p.stat(p.MeanNs/1e6, 3), p.stat(p.MedianNs/1e6, 3), p.stat(p.NsPerCall, 4), p.ratio())
			rows = append(rows, row)
		}
	}
	return rows
}

func (p Point) runMs(run int) string {
	if run >= len(p.Runs) {
		return "-"
	}
	return significant(float64(p.Runs[run].LoopNs)/1e6, 3)
}

func (p Point) stat(v float64, digits int) string {
	if len(p.Runs) == 0 {
		return "-"
	}
	return significant(v, digits)
}

func (p Point) ratio() string {
	if p.VsSeccomp == nil {
		return "-"
	}
	return strconv.FormatFloat(*p.VsSeccomp, 'f', 2, 64) + "×"
}

// significant writes v in plain decimal with at least digits significant
// digits: 0.00123, 1.23, 1234.
func significant(v float64, digits int) string {
	decimals := 0
	if v > 0 {
		decimals = max(0, digits-1-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// writeMarkdown writes a Markdown table with its columns padded to line
// up; the first two columns are text, the others numbers, aligned right.
func writeMarkdown(b *strings.Builder, header []string, rows [][]string) {
	widths := make([]int, len(header))
	for _, row := range append([][]string{header}, rows...) {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	rule := make([]string, len(header))
	for i, w := range widths {
		rule[i] = strings.Repeat("-", w)
		if i >= 2 {
			rule[i] = strings.Repeat("-", w-1) + ":"
		}
	}
	for _, row := range append([][]string{header, rule}, rows...) {
		b.WriteString("|")
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i >= 2 {
				cell = pad + cell
			} else {
				cell += pad
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
}

// Chart returns r as a chart: the mean time of each mechanism's loop
// against the number of calls, both on logarithmic scales.
func (r Report) Chart() plot.LogLog {
	c := plot.LogLog{
		Title:  "getpid in a loop under each mechanism (mean of " + strconv.Itoa(r.Runs) + " runs)",
		XLabel: "iterations (getpid calls)",
		YLabel: "wall time of the loop (ms)",
	}
	for _, s := range r.Series {
		ps := plot.Series{Name: string(s.Mechanism)}
		for _, p := range s.Points {
			if len(p.Runs) > 0 {
				ps.Points = append(ps.Points, plot.Point{X: float64(p.Iterations), Y: p.MeanNs / 1e6})
			}
		}
		c.Series = append(c.Series, ps)
	}
	return c
}
