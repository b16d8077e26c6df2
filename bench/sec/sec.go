// Package sec measures what a seccomp program costs per system call in
// the real kernel, after gVisor's test/sec.
//
// Run makes each system call of a list many times in child processes under
// three programs: one that allows everything, the baseline; the program
// under test, whose fast path may be the kernel's action cache; and the
// program behind a prefix that defeats the cache, so that the filter runs on
// every call. In the last two every action but ALLOW and LOG becomes an
// errno (filter.DistinctErrnos), so that denied calls are timed too and
// nothing dies. The Report gives the median cost of each call under each
// program, the overhead against the baseline, and a weighted aggregate.
//
// The children are copies of the running binary started by filter.Child:
// a binary that calls Run must call filter.MaybeRunChild first thing in
// main, or in TestMain. Linking this package registers the measuring role.
//
// Measurements are made on x86_64 and are noisy on shared machines: compare
// numbers from one Report, not absolute times across runs.
package sec

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// Call is a system call to measure. It is made for real, many times: choose
// calls that return at once and change nothing whatever the program
// decides, such as calls on a bad file descriptor.
type Call struct {
	Name string     `json:"name"`
	Nr   uintptr    `json:"nr"`
	Args [6]uintptr `json:"args"`
	// Weight is the share of the call in the aggregate, typically its
	// count in a profile. When every weight is zero, calls count equally.
	Weight float64 `json:"weight"`
}

// Options tune Run. The zero value measures 200,000 calls in each of 5 runs.
type Options struct {
	// CallsPerRun is how many times a child makes each call in one run,
	// after a tenth as many untimed calls to warm caches up.
	CallsPerRun int
	// Runs is how many children measure each program; Report keeps the
	// median.
	Runs int
	// Child starts the children.
	Child filter.Child
}

// Defaults of Options.
const (
	DefaultCallsPerRun = 200_000
	DefaultRuns        = 5
)

func (o Options) withDefaults() (Options, error) {
	if o.CallsPerRun < 0 || o.Runs < 0 {
		return o, fmt.Errorf("sec: negative options: %d calls per run, %d runs", o.CallsPerRun, o.Runs)
	}
	if o.CallsPerRun == 0 {
		o.CallsPerRun = DefaultCallsPerRun
	}
	if o.Runs == 0 {
		o.Runs = DefaultRuns
	}
	return o, nil
}

// The programs a call is measured under, in the order of Report's fields.
const (
	allowAll = iota
	cached
	uncached
	configs
)

// Run measures prog on calls. It takes about CallsPerRun × Runs × 3 ×
// len(calls) system calls, and two CPUs while a child measures: one makes
// the calls, the other keeps the time. A binary built with the race
// detector hangs in a child when prog denies futex(2) (see
// filter.ChildFunc); ctx ends the wait.
func Run(ctx context.Context, prog []bpf.Instruction, calls []Call, opts Options) (Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Report{}, err
	}
	if len(calls) == 0 {
		return Report{}, errors.New("sec: no system calls to measure")
	}
	progs, errnoOf, err := programs(prog)
	if err != nil {
		return Report{}, err
	}
	var m measurements
	for run := range opts.Runs {
		// Rotating the order spreads any drift of the machine over the
		// three programs instead of always favouring the first.
		for k := range configs {
			cfg := (run + k) % configs
			if err := m.add(ctx, opts, cfg, progs[cfg], calls); err != nil {
				return Report{}, err
			}
		}
	}
	return newReport(prog, calls, opts, &m, errnoOf)
}

// programs returns the three programs Run measures, and the errnos that
// stand for the actions of prog.
func programs(prog []bpf.Instruction) ([configs][]bpf.Instruction, map[uint32]uint16, error) {
	denied, errnoOf := filter.DistinctErrnos(prog)
	defeated, err := defeatCache(denied)
	if err != nil {
		return [configs][]bpf.Instruction{}, nil, err
	}
	return [configs][]bpf.Instruction{
		allowAll: {bpf.Ret(unix.SECCOMP_RET_ALLOW)},
		cached:   denied,
		uncached: defeated,
	}, errnoOf, nil
}

// cacheDefeat is the prefix of defeatCache.
var cacheDefeat = []bpf.Instruction{
	bpf.LoadAbs(bpf.ArgHigh(5)),
	{Op: bpf.ClassLd | bpf.ModeImm, K: 0},
}

// defeatCache puts in front of prog two instructions that keep the kernel's
// action cache from answering for it, without changing any verdict.
//
// When a filter is attached, the kernel emulates it for every system call
// number (seccomp_cache_prepare_bitmap, Linux 5.11) and marks a number as
// always allowed when the emulation reaches SECCOMP_RET_ALLOW having loaded
// nothing but nr and arch. A load of any other field ends the emulation
// without marking, so a first instruction that loads the high half of
// args[5] leaves every number to the filter. The second instruction puts
// back into A the 0 that prog would have found there at its start; X and the
// scratch memory are untouched, and jumps are relative, so prog computes
// exactly what it did alone.
func defeatCache(prog []bpf.Instruction) ([]bpf.Instruction, error) {
	if len(prog)+len(cacheDefeat) > bpf.MaxInstructions {
		return nil, fmt.Errorf("sec: no room to defeat the action cache: the program has %d instructions, the kernel takes %d", len(prog), bpf.MaxInstructions)
	}
	return append(slices.Clone(cacheDefeat), prog...), nil
}

// measurements collects what the children measured, per program and call.
type measurements struct {
	ns      [configs][][]float64 // per call, one median-able sample per run
	results [configs][]filter.Result
}

func (m *measurements) add(ctx context.Context, opts Options, cfg int, prog []bpf.Instruction, calls []Call) error {
	recs, err := measureInChild(ctx, opts, prog, calls)
	if err != nil {
		return err
	}
	if m.ns[cfg] == nil {
		m.ns[cfg] = make([][]float64, len(calls))
		for _, r := range recs {
			m.results[cfg] = append(m.results[cfg], r.result)
		}
	}
	for i, r := range recs {
		m.ns[cfg][i] = append(m.ns[cfg][i], float64(r.elapsed.Nanoseconds())/float64(opts.CallsPerRun))
	}
	return nil
}
