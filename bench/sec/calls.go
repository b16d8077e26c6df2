package sec

import "golang.org/x/sys/unix"

// DefaultCalls is the top of a system call profile: PostgreSQL serving
// pgbench under gVisor, as gVisor's seccomp write-up lists it, weighted by
// the counts of that profile. nanosleep, second in the profile, is left out
// because it sleeps. Every call returns at once and changes nothing: getpid,
// calls on descriptor -1, an invalid futex operation, and ppoll with a
// signal mask of a wrong size, which fails before it looks at descriptors
// or waits.
func DefaultCalls() []Call {
	const (
		badFD      = ^uintptr(0) // -1
		badFutexOp = 0x7f        // no such FUTEX_* command: ENOSYS
		anyPtr     = 1           // never read: the call fails first
	)
	return []Call{
		{Name: "futex", Nr: unix.SYS_FUTEX, Args: [6]uintptr{0, badFutexOp}, Weight: 870063},
		{Name: "sendmmsg", Nr: unix.SYS_SENDMMSG, Args: [6]uintptr{badFD}, Weight: 160201},
		{Name: "fstat", Nr: unix.SYS_FSTAT, Args: [6]uintptr{badFD}, Weight: 115769},
		{Name: "ppoll", Nr: unix.SYS_PPOLL, Args: [6]uintptr{0, 0, 0, anyPtr, 0}, Weight: 69749},
		{Name: "fsync", Nr: unix.SYS_FSYNC, Args: [6]uintptr{badFD}, Weight: 23131},
		{Name: "pwrite64", Nr: unix.SYS_PWRITE64, Args: [6]uintptr{badFD}, Weight: 14096},
		{Name: "epoll_pwait", Nr: unix.SYS_EPOLL_PWAIT, Args: [6]uintptr{badFD, 0, 1}, Weight: 12266},
		{Name: "close", Nr: unix.SYS_CLOSE, Args: [6]uintptr{badFD}, Weight: 1991},
		{Name: "getpid", Nr: unix.SYS_GETPID, Weight: 1413},
		{Name: "read", Nr: unix.SYS_READ, Args: [6]uintptr{badFD}, Weight: 1056},
	}
}
