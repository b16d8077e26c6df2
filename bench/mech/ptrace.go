package mech

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// tracer is a ptrace tracer of the payload, attached by PTRACE_TRACEME. At
// each of its stops it reads the number of the call, as a tracer enforcing
// a policy must (seccomp-benchmark's reads the registers too), and counts
// getpid.
type tracer struct {
	// options are the tracer's PTRACE_O_* options besides EXITKILL.
	options int
	// resume restarts the payload until its next stop, delivering a
	// signal unless it is 0: unix.PtraceSyscall or unix.PtraceCont.
	resume func(pid, sig int) error
	// stop is the code (status >> 8) that the wait status of the tracer's
	// stops carries.
	stop int
	// twice says the tracer stops at both the entry and the exit of a
	// call; it reads the number at the entry.
	twice bool
}

var (
	// syscallTracer stops at every entry and exit (PTRACE_SYSCALL); with
	// PTRACE_O_TRACESYSGOOD its stops are SIGTRAP|0x80, which no signal is.
	syscallTracer = tracer{
		options: unix.PTRACE_O_TRACESYSGOOD,
		resume:  unix.PtraceSyscall,
		stop:    int(unix.SIGTRAP) | 0x80,
		twice:   true,
	}
	// seccompTracer stops where the payload's program returns
	// SECCOMP_RET_TRACE, at a PTRACE_EVENT_SECCOMP stop.
	seccompTracer = tracer{
		options: unix.PTRACE_O_TRACESECCOMP,
		resume:  unix.PtraceCont,
		stop:    int(unix.SIGTRAP) | unix.PTRACE_EVENT_SECCOMP<<8,
	}
)

// trace follows the payload pid from the stop that ends its execve to its
// end. It must run on the thread that started the payload.
func (t *tracer) trace(pid int) ended {
	ws, err := waitPid(pid)
	if err != nil || !ws.Stopped() {
		return ended{status: ws, err: err}
	}
	// EXITKILL: should this process die, the payload dies too instead of
	// running on untraced.
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL|t.options); err != nil {
		return abandon(pid, 0, fmt.Errorf("ptrace: set options: %w", err))
	}
	var st traceState
	for {
		if err := t.resume(pid, st.signal); err != nil {
			return abandon(pid, st.calls, fmt.Errorf("ptrace: resume: %w", err))
		}
		ws, err := waitPid(pid)
		if err != nil || !ws.Stopped() {
			return ended{status: ws, intercepted: st.calls, err: err}
		}
		if err := t.stopped(pid, ws, &st); err != nil {
			return abandon(pid, st.calls, err)
		}
	}
}

// traceState is what a tracer carries from one stop to the next.
type traceState struct {
	// calls counts the getpid calls seen.
	calls uint64
	// signal is the signal to deliver on resuming, 0 for none.
	signal int
	// exiting says the next stop of the tracer is the exit of a call.
	exiting bool
}

// stopped deals with stop ws of the payload: a stop of the tracer, at
// which it reads the call's number, or a signal to pass on.
func (t *tracer) stopped(pid int, ws unix.WaitStatus, st *traceState) error {
	st.signal = 0
	switch {
	case int(ws>>8)&0xffff != t.stop:
		st.signal = int(ws.StopSignal())
	case st.exiting:
		st.exiting = false
	default:
		st.exiting = t.twice
		nr, err := syscallNr(pid)
		if err != nil {
			return err
		}
		if nr == unix.SYS_GETPID {
			st.calls++
		}
	}
	return nil
}

// syscallNr reads the number of the call at which the payload stopped.
func syscallNr(pid int) (uint64, error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &regs); err != nil {
		return 0, fmt.Errorf("ptrace: read registers: %w", err)
	}
	return regs.Orig_rax, nil
}

// abandon kills the payload after the tracer failed, and reaps it.
func abandon(pid int, n uint64, err error) ended {
	unix.Kill(pid, unix.SIGKILL)
	for {
		ws, werr := waitPid(pid)
		if werr != nil || !ws.Stopped() {
			return ended{status: ws, intercepted: n, err: errors.Join(err, werr)}
		}
	}
}
