package mech

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/filter"
)

// spec is how a mechanism intercepts getpid: with a seccomp program in the
// payload, a tracer, an observer in the parent, or a combination.
type spec struct {
	description string
	// filter is the payload's seccomp program, nil for none.
	filter *program
	// tracer traces the payload from its exec on, nil for none.
	tracer *tracer
	// observe starts what watches the payload from the parent, nil for
	// none. It is called before the payload starts.
	observe func() (observer, error)
	// slow marks the mechanisms that cost microseconds a call, which
	// Options.SlowLimit holds back.
	slow bool
	// run measures a payload that another part of syscell starts (the
	// supervised mechanism's, which cell.Run starts), instead of the
	// fields above.
	run func(context.Context, request) (Sample, error)
	// needs returns nil where what the mechanism needs is there, else an
	// error wrapping ErrUnavailable.
	needs func() error
}

var specs = map[Mechanism]spec{
	None: {
		description: "nothing intercepts getpid",
	},
	Seccomp: {
		description: "seccomp allowlist, getpid decided by number alone (kernel action cache)",
		filter:      &program{getpid: unix.SECCOMP_RET_ALLOW},
	},
	SeccompUncached: {
		description: "same allowlist, getpid's rule reads the instruction pointer (filter runs every call)",
		filter:      &program{getpid: unix.SECCOMP_RET_ALLOW, readIP: true},
	},
	SeccompStacked: {
		description: "two such filters stacked (a second filter at a phase's start): both run every call",
		filter:      &program{getpid: unix.SECCOMP_RET_ALLOW, readIP: true, stacked: 2},
	},
	UserNotif: {
		description: "seccomp SECCOMP_RET_USER_NOTIF, a supervisor answers CONTINUE",
		filter:      &program{getpid: unix.SECCOMP_RET_USER_NOTIF},
		observe:     func() (observer, error) { return new(supervisor), nil },
		slow:        true,
	},
	Ptrace: {
		description: "ptrace PTRACE_SYSCALL, the tracer stops at every entry and exit",
		tracer:      &syscallTracer,
		slow:        true,
	},
	SeccompTrace: {
		description: "seccomp SECCOMP_RET_TRACE for getpid, ptrace PTRACE_CONT",
		filter:      &program{getpid: unix.SECCOMP_RET_TRACE},
		tracer:      &seccompTracer,
		slow:        true,
	},
	EBPF: {
		description: "eBPF raw_tp/sys_enter, payload found in a hash map and counted",
		observe:     newCounter,
	},
	Supervised: {
		description: "syscell's per-library supervisor, getpid from libc's code (cached call chain)",
		run:         measureSupervised,
		needs:       supervisable,
		slow:        true,
	},
	SupervisedProc: {
		description: "the same, the caller found in /proc and the stack, as without root",
		run:         measureSupervised,
		needs:       supervisable,
		slow:        true,
	},
}

// An observer is the part of a mechanism that watches the payload from the
// parent: the user-notification supervisor, the eBPF counter.
type observer interface {
	// watch starts watching the payload pid, which waits to loop.
	// listener is the payload's notification listener, nil when it has
	// none; watch takes it over.
	watch(pid int, listener *os.File) error
	// seen returns how many getpid calls the observer saw, once the
	// payload has exited.
	seen(pid int) (uint64, error)
	// Close releases what the observer holds.
	Close() error
}

// observed reports whether something, a tracer or an observer, sees the
// payload's calls and counts them into Sample.Intercepted.
func (s spec) observed() bool { return s.tracer != nil || s.observe != nil || s.run != nil }

// available returns nil, or an error wrapping ErrUnavailable that says why
// the mechanism cannot run here.
func (s spec) available() error {
	if s.needs != nil {
		if err := s.needs(); err != nil {
			return err
		}
	}
	if s.filter != nil {
		if err := s.filter.available(); err != nil {
			return unavailable(err, filter.ErrNotSupported)
		}
	}
	if s.observe != nil {
		obs, err := s.observe()
		if err != nil {
			return err
		}
		return obs.Close()
	}
	return nil
}

// unavailable wraps err in ErrUnavailable when it wraps cause.
func unavailable(err, cause error) error {
	if errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// measure runs one payload under the mechanism, and checks that the
// mechanism, if it can tell, intercepted every call: a figure for calls
// that went by unseen would flatter it.
func (s spec) measure(ctx context.Context, req request) (Sample, error) {
	if s.run != nil {
		sample, err := s.run(ctx, req)
		if err == nil && sample.Intercepted < uint64(req.Iterations) {
			err = fmt.Errorf("only %d of the payload's %d getpid calls were intercepted", sample.Intercepted, req.Iterations)
		}
		return sample, err
	}
	var obs observer
	if s.observe != nil {
		var err error
		if obs, err = s.observe(); err != nil {
			return Sample{}, err
		}
		defer obs.Close()
	}
	p, err := start(ctx, req, s.tracer)
	if err != nil {
		return Sample{}, err
	}
	// Deferred last, stop runs first: the supervisor's Close waits for the
	// payload's end.
	defer p.stop()
	sample, err := p.run(obs)
	if err == nil && s.observed() && sample.Intercepted < uint64(req.Iterations) {
		err = fmt.Errorf("only %d of the payload's %d getpid calls were intercepted", sample.Intercepted, req.Iterations)
	}
	return sample, err
}
