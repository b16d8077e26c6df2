package sec

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// Report is what Run measured.
type Report struct {
	// Instructions is the length of the program under test.
	Instructions int             `json:"instructions"`
	CallsPerRun  int             `json:"calls_per_run"`
	Runs         int             `json:"runs"`
	Syscalls     []SyscallReport `json:"syscalls"`
	Aggregate    Aggregate       `json:"aggregate"`
}

// SyscallReport is what one call costs under each program.
type SyscallReport struct {
	Call
	// Cacheable reports whether the kernel's action cache answers this
	// call under the program, as bpf.Run finds it.
	Cacheable bool `json:"cacheable"`
	// Allow is the baseline, under a program that allows everything.
	Allow Timing `json:"allow"`
	// Cached is under the program as given, its actions made errnos.
	Cached Timing `json:"cached"`
	// Uncached is the same behind a prefix that defeats the action cache.
	Uncached Timing `json:"uncached"`
}

// Timing is what one call cost, and returned, under one program.
type Timing struct {
	// NsPerCall is the median over the runs of RunsNs.
	NsPerCall float64 `json:"ns_per_call"`
	// RunsNs is the mean time of a call in each run, in nanoseconds.
	RunsNs []float64 `json:"runs_ns"`
	// OverheadNs is NsPerCall minus that of the baseline; nil for the
	// baseline itself.
	OverheadNs *float64 `json:"overhead_ns,omitempty"`
	// Result is what the call returned in the first run.
	Result filter.Result `json:"result"`
	// Verdict is what the original program decided: the return value that
	// stopped the call, or SECCOMP_RET_ALLOW when the call ran.
	Verdict uint32 `json:"verdict"`
}

// Aggregate is the weighted mean cost of a call under each program, from
// the medians and the weights of the calls: what a call of the profile costs
// on average.
type Aggregate struct {
	AllowNs            float64 `json:"allow_ns"`
	CachedNs           float64 `json:"cached_ns"`
	UncachedNs         float64 `json:"uncached_ns"`
	CachedOverheadNs   float64 `json:"cached_overhead_ns"`
	UncachedOverheadNs float64 `json:"uncached_overhead_ns"`
}

func newReport(prog []bpf.Instruction, calls []Call, opts Options, m *measurements, errnoOf map[uint32]uint16) (Report, error) {
	r := Report{Instructions: len(prog), CallsPerRun: opts.CallsPerRun, Runs: opts.Runs}
	for i, c := range calls {
		cacheable, err := kernelCacheable(prog, c)
		if err != nil {
			return Report{}, err
		}
		var t [configs]Timing
		for cfg := range configs {
			t[cfg] = timing(m.ns[cfg][i], m.results[cfg][i], errnoOf)
		}
		for _, cfg := range []int{cached, uncached} {
			over := t[cfg].NsPerCall - t[allowAll].NsPerCall
			t[cfg].OverheadNs = &over
		}
		r.Syscalls = append(r.Syscalls, SyscallReport{Call: c, Cacheable: cacheable, Allow: t[allowAll], Cached: t[cached], Uncached: t[uncached]})
	}
	r.Aggregate = aggregate(r.Syscalls)
	return r, nil
}

// kernelCacheable runs prog on c in the interpreter. The instruction
// pointer is left 0: a program that reads it is not cacheable anyway.
func kernelCacheable(prog []bpf.Instruction, c Call) (bool, error) {
	in := bpf.SeccompData{Nr: uint32(c.Nr), Arch: unix.AUDIT_ARCH_X86_64}
	for i, a := range c.Args {
		in.Args[i] = uint64(a)
	}
	res, err := bpf.Run(prog, &in)
	if err != nil {
		return false, fmt.Errorf("sec: %s: %w", c.Name, err)
	}
	return res.KernelCacheable, nil
}

func timing(runs []float64, res filter.Result, errnoOf map[uint32]uint16) Timing {
	return Timing{NsPerCall: median(runs), RunsNs: runs, Result: res, Verdict: filter.Verdict(res, errnoOf)}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func aggregate(syscalls []SyscallReport) Aggregate {
	var a Aggregate
	for i, w := range shares(syscalls) {
		s := syscalls[i]
		a.AllowNs += w * s.Allow.NsPerCall
		a.CachedNs += w * s.Cached.NsPerCall
		a.UncachedNs += w * s.Uncached.NsPerCall
	}
	a.CachedOverheadNs = a.CachedNs - a.AllowNs
	a.UncachedOverheadNs = a.UncachedNs - a.AllowNs
	return a
}

// shares normalizes the weights of the calls to sum to 1.
func shares(syscalls []SyscallReport) []float64 {
	var total float64
	for _, s := range syscalls {
		total += s.Weight
	}
	out := make([]float64, len(syscalls))
	for i, s := range syscalls {
		if total == 0 {
			out[i] = 1 / float64(len(syscalls))
		} else {
			out[i] = s.Weight / total
		}
	}
	return out
}

// WriteJSON writes r as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("sec: write report: %w", err)
	}
	return nil
}

// WriteTable writes r as a table for people: one line per call, then the
// aggregate, times in nanoseconds.
func (r Report) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "program of %d instructions, median ns per call over %d runs of %d calls\n", r.Instructions, r.Runs, r.CallsPerRun); err != nil {
		return fmt.Errorf("sec: write report: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "syscall\tweight\tverdict\tcacheable\tallow\tcached\toverhead\tuncached\toverhead\t")
	for i, share := range shares(r.Syscalls) {
		s := r.Syscalls[i]
		fmt.Fprintf(tw, "%s\t%.1f%%\t%s\t%t\t%.1f\t%.1f\t%+.1f\t%.1f\t%+.1f\t\n",
			s.Name, 100*share, filter.ActionName(s.Cached.Verdict), s.Cacheable,
			s.Allow.NsPerCall, s.Cached.NsPerCall, *s.Cached.OverheadNs, s.Uncached.NsPerCall, *s.Uncached.OverheadNs)
	}
	a := r.Aggregate
	fmt.Fprintf(tw, "aggregate\t100%%\t\t\t%.1f\t%.1f\t%+.1f\t%.1f\t%+.1f\t\n",
		a.AllowNs, a.CachedNs, a.CachedOverheadNs, a.UncachedNs, a.UncachedOverheadNs)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("sec: write report: %w", err)
	}
	return nil
}
