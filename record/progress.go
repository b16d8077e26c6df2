//go:build linux

package record

import (
	"fmt"
	"io"
	"time"

	"github.com/syscell/syscell/trace"
)

// progress reports, for long runs, how many calls were recorded and lost.
type progress struct {
	w      io.Writer
	every  time.Duration
	tracer *trace.Tracer
	start  time.Time
	last   time.Time
	calls  uint64
}

func newProgress(opts Options, t *trace.Tracer) *progress {
	every := opts.ProgressEvery
	if every == 0 {
		every = DefaultProgressEvery
	}
	now := time.Now()
	return &progress{w: opts.Progress, every: every, tracer: t, start: now, last: now}
}

// tick writes a line if one is due.
func (p *progress) tick(r *recorder) {
	if p.w == nil || time.Since(p.last) < p.every {
		return
	}
	counts, err := p.tracer.Counts()
	if err != nil {
		return
	}
	lost, err := p.tracer.Lost()
	if err != nil {
		return
	}
	calls := sum(counts) + sum(r.counts)
	now := time.Now()
	rate := float64(calls-p.calls) / now.Sub(p.last).Seconds()
	fmt.Fprintf(p.w, "syscell: record: %s: %d calls (%.0f/s), %d snapshots, %d lost\n",
		now.Sub(p.start).Round(time.Second), calls, rate, r.stats.Snapshots, lost.Total())
	p.calls, p.last = calls, now
}
