// Package mech measures what each Linux mechanism for watching or
// filtering system calls costs the process it watches. It extends
// seccomp-benchmark, which timed a payload making N system calls under
// ptrace and under seccomp, to every mechanism syscell may build on: none,
// a seccomp filter whose verdict the kernel caches, one that must run on
// every call, seccomp user notification, ptrace, seccomp RET_TRACE with
// ptrace, and an eBPF program at sys_enter.
//
// # The payload
//
// The payload is a copy of the running binary that makes N raw getpid
// calls in a loop under one mechanism. It is started with the environment
// variable PayloadEnv and plays its part from an init function of this
// package, before main: the Go runtime keeps the main goroutine on the main
// thread only while packages initialize, and the main thread is the one
// that PTRACE_TRACEME puts under the tracer (the runtime's other threads,
// which it clones, are not traced). Linking this package is thus all a
// binary needs to serve as the payload. It is not a role of filter.Child,
// whose Run waits for its child on a thread of its own: that wait would
// swallow the stops that the tracer waits for.
//
// # What is timed
//
// The payload times its own loop, from its first call to its last, with
// the vDSO clock, which makes no system call and so is invisible to every
// mechanism. seccomp-benchmark timed the whole process from the parent;
// here that would add the start-up of a Go binary to every figure: exec,
// the runtime's initialization and the filter's installation, well over a
// hundred system calls at each of which ptrace stops twice. At 10 or 1000
// calls that outweighs the loop being measured, and it varies from run to
// run by more than the loop takes.
//
// Times are wall-clock and noisy on shared machines: compare figures of
// one Report, not absolute times across runs.
package mech

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Mechanism names a way of intercepting the payload's getpid calls.
type Mechanism string

// The mechanisms, in the order of the report.
const (
	// None intercepts nothing: the cost of getpid itself.
	None Mechanism = "none"
	// Seccomp is a small allowlist whose verdict for getpid depends only
	// on the call's number, so that the kernel's action cache answers it
	// without running the filter.
	Seccomp Mechanism = "seccomp"
	// SeccompUncached is the same allowlist with a getpid rule that reads
	// the instruction pointer, as a per-library compartment does, so that
	// the filter runs on every call.
	SeccompUncached Mechanism = "seccomp-uncached"
	// SeccompStacked is two such filters stacked, as a second filter
	// installed when a server starts serving would be (policy phases):
	// the kernel runs both on every call.
	SeccompStacked Mechanism = "seccomp-stacked"
	// UserNotif routes getpid to a supervisor in the parent with
	// SECCOMP_RET_USER_NOTIF; the supervisor lets every call continue.
	UserNotif Mechanism = "user-notif"
	// Ptrace stops the payload at the entry and exit of every system call
	// (PTRACE_SYSCALL); the tracer reads the call's number at each entry.
	Ptrace Mechanism = "ptrace"
	// SeccompTrace stops the payload for getpid only, with
	// SECCOMP_RET_TRACE; the tracer reads the call's number and lets it
	// run (PTRACE_O_TRACESECCOMP, PTRACE_CONT).
	SeccompTrace Mechanism = "seccomp-trace"
	// EBPF counts the payload's getpid calls with an eBPF program at the
	// raw sys_enter tracepoint, which finds the payload in a hash map and
	// runs on every system call of the machine.
	EBPF Mechanism = "ebpf"
	// Supervised is syscell's per-library supervisor deciding getpid made
	// from libc's code, whose owner only an unwind tells (supervised.go):
	// to compare with UserNotif, its floor. As root, the supervisor finds
	// the caller in the kernel's snapshot of the thread (run/cell/snapshot).
	Supervised Mechanism = "supervised"
	// SupervisedProc is the same with the caller found in /proc and the
	// thread's memory, as without root.
	SupervisedProc Mechanism = "supervised-proc"
)

// Mechanisms returns every mechanism, in the order of the report.
func Mechanisms() []Mechanism {
	return []Mechanism{None, Seccomp, SeccompUncached, SeccompStacked, UserNotif, Supervised, SupervisedProc, Ptrace, SeccompTrace, EBPF}
}

// Description says in a few words what m does, for legends.
func (m Mechanism) Description() string { return specs[m].description }

// ParseMechanism returns the mechanism named s. Its error names s and the
// mechanisms there are, without a prefix, ready for a command line.
func ParseMechanism(s string) (Mechanism, error) {
	m := Mechanism(s)
	if _, ok := specs[m]; !ok {
		var names []string
		for _, m := range Mechanisms() {
			names = append(names, string(m))
		}
		return "", fmt.Errorf("unknown mechanism %q (want %s)", s, strings.Join(names, ", "))
	}
	return m, nil
}

// ErrUnavailable is wrapped by the errors of Available when a mechanism
// cannot run here: the kernel lacks it, or it needs privileges this
// process has not (eBPF needs root).
var ErrUnavailable = errors.New("unavailable")

// Available returns nil when m can be measured here, or an error wrapping
// ErrUnavailable that says why not.
func Available(m Mechanism) error {
	if _, err := ParseMechanism(string(m)); err != nil {
		return fmt.Errorf("mech: %w", err)
	}
	if err := specs[m].available(); err != nil {
		return fmt.Errorf("mech: %s: %w", m, err)
	}
	return nil
}

// Options tune Run. The zero value measures every mechanism at
// DefaultIterations, DefaultRuns times.
type Options struct {
	// Iterations are the numbers of getpid calls to time, in the order of
	// the report.
	Iterations []int
	// Runs is how many payloads each mechanism runs at each number.
	Runs int
	// Mechanisms are the mechanisms to measure, in the order of the
	// report.
	Mechanisms []Mechanism
	// SlowLimit is the largest number of calls the slow mechanisms (those
	// that cost microseconds a call: user-notif, ptrace, seccomp-trace)
	// make; larger ones are skipped for them, as seccomp-benchmark skipped
	// ptrace beyond 100,000. Zero means no limit.
	SlowLimit int
}

// Defaults of Options: seccomp-benchmark's table.
var (
	DefaultIterations = []int{10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000}
	DefaultRuns       = 3
)

func (o Options) withDefaults() (Options, error) {
	if slices.ContainsFunc(o.Iterations, func(n int) bool { return n <= 0 }) {
		return o, fmt.Errorf("mech: numbers of calls %v: not all positive", o.Iterations)
	}
	if o.Runs < 0 || o.SlowLimit < 0 {
		return o, fmt.Errorf("mech: negative options: %d runs, slow limit %d", o.Runs, o.SlowLimit)
	}
	if len(o.Iterations) == 0 {
		o.Iterations = slices.Clone(DefaultIterations)
	}
	if o.Runs == 0 {
		o.Runs = DefaultRuns
	}
	if len(o.Mechanisms) == 0 {
		o.Mechanisms = Mechanisms()
	}
	for _, m := range o.Mechanisms {
		if _, err := ParseMechanism(string(m)); err != nil {
			return o, fmt.Errorf("mech: %w", err)
		}
	}
	return o, nil
}

// Run measures every mechanism of opts at every number of calls, and
// reports. A mechanism that is not Available is reported as skipped, with
// the reason; any other failure ends the run.
func Run(ctx context.Context, opts Options) (Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Report{}, err
	}
	r := newReport(opts)
	for i := range r.Series {
		s := &r.Series[i]
		if err := specs[s.Mechanism].available(); errors.Is(err, ErrUnavailable) {
			s.Skipped = err.Error()
		} else if err != nil {
			return Report{}, fmt.Errorf("mech: %s: %w", s.Mechanism, err)
		}
	}
	for run := range opts.Runs {
		if err := r.measureRun(ctx, run); err != nil {
			return Report{}, err
		}
	}
	r.summarize()
	return r, nil
}

// measureRun makes one run of every point to be measured. The mechanisms
// take turns in an order rotated by run, which spreads any drift of the
// machine over all of them instead of always favouring the first.
func (r *Report) measureRun(ctx context.Context, run int) error {
	for p := range r.Iterations {
		for k := range r.Series {
			s := &r.Series[(run+k)%len(r.Series)]
			pt := &s.Points[p]
			if s.Skipped != "" || pt.Skipped != "" {
				continue
			}
			sample, err := Measure(ctx, s.Mechanism, pt.Iterations)
			if err != nil {
				return err
			}
			pt.Runs = append(pt.Runs, sample)
		}
	}
	return nil
}

// Sample is what one payload measured.
type Sample struct {
	// LoopNs is the wall time of the loop of getpid calls, in
	// nanoseconds, measured in the payload.
	LoopNs int64 `json:"loop_ns"`
	// Intercepted counts the getpid calls that the mechanism's tracer,
	// supervisor or eBPF program saw: as many as the payload made, when
	// the mechanism works. It is zero for the mechanisms that have no
	// observer (none and the plain seccomp filters).
	Intercepted uint64 `json:"intercepted,omitempty"`
}

// Measure starts one payload that makes n getpid calls under m, and
// returns what it measured. Cancelling ctx kills the payload.
func Measure(ctx context.Context, m Mechanism, n int) (Sample, error) {
	if _, err := ParseMechanism(string(m)); err != nil {
		return Sample{}, fmt.Errorf("mech: %w", err)
	}
	if n < 0 {
		return Sample{}, fmt.Errorf("mech: %s: negative number of calls %d", m, n)
	}
	sample, err := specs[m].measure(ctx, request{Mechanism: m, Iterations: n})
	if err != nil {
		return Sample{}, fmt.Errorf("mech: %s, %d calls: %w", m, n, err)
	}
	return sample, nil
}
