package filter

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
)

// Install attaches prog as a seccomp filter of the calling process and
// returns the notification listener's file descriptor when flags include
// FlagNewListener, -1 otherwise.
//
// Install first sets no_new_privs (PR_SET_NO_NEW_PRIVS): the kernel demands
// it of callers without CAP_SYS_ADMIN, and it keeps a filter from being
// shed through a setuid execve. It is set even for privileged callers and
// cannot be cleared: from then on execve grants no privileges (setuid bits,
// file capabilities) to this process or to its children.
//
// Without FlagTSync the filter applies to the calling thread only, and to
// threads it creates later. Call Install from a goroutine locked to its
// thread (runtime.LockOSThread) that never unlocks it, or the scheduler
// would move the goroutine to unfiltered threads and run other goroutines on
// the filtered one. The Go runtime starts and reuses threads at will, so a
// Go program that enforces a policy must pass FlagTSync.
//
// A failed FlagTSync synchronization, in which some thread could not take
// the filter, installs nothing and returns an error wrapping ESRCH. A
// program the kernel rejects returns an error wrapping EINVAL, and flags
// this kernel does not know an error wrapping ErrNotSupported.
func Install(prog []bpf.Instruction, flags Flags) (listener int, err error) {
	if err := flags.check(); err != nil {
		return -1, err
	}
	// sock_fprog counts instructions in 16 bits: a longer program would
	// reach the kernel truncated, and perhaps valid.
	if len(prog) > bpf.MaxInstructions {
		return -1, fmt.Errorf("filter: %d instructions, more than the kernel's %d: %w", len(prog), bpf.MaxInstructions, unix.EINVAL)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("filter: set no_new_privs: %w", err)
	}
	ret, err := setModeFilter(prog, flags)
	if err != nil {
		return -1, installError(err, len(prog), flags)
	}
	return listenerOf(ret, flags)
}

// setModeFilter makes the seccomp(SECCOMP_SET_MODE_FILTER) call.
func setModeFilter(prog []bpf.Instruction, flags Flags) (uintptr, error) {
	insns := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		insns[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(insns))}
	if len(insns) > 0 {
		fprog.Filter = &insns[0]
	}
	// seccomp(2) does not block, and a raw call leaves the scheduler alone
	// at the moment a filter that may deny its futex(2) takes effect.
	ret, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(insns)
	if errno != 0 {
		return 0, errno
	}
	return ret, nil
}

// installError explains a failed installation. The kernel answers EINVAL
// both to a bad program and to flags it does not know; only a probe tells
// them apart.
func installError(err error, n int, flags Flags) error {
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if ferr := FlagsSupported(flags); errors.Is(ferr, ErrNotSupported) {
			return fmt.Errorf("filter: install: %w", ferr)
		}
	}
	return fmt.Errorf("filter: install %d-instruction program with flags %s: %w", n, flags, err)
}

// listenerOf reads the value seccomp(2) returned: the listener with
// FlagNewListener; with FlagTSync alone, the id of a thread that could not
// be synchronized, or 0.
func listenerOf(ret uintptr, flags Flags) (int, error) {
	if flags&FlagNewListener != 0 {
		return int(ret), nil
	}
	if ret != 0 {
		return -1, fmt.Errorf("filter: install with flags %s: thread %d cannot take the filter: %w", flags, ret, unix.ESRCH)
	}
	return -1, nil
}
