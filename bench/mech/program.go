package mech

import (
	"fmt"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// program is the payload's seccomp program: an allowlist in which getpid
// gets an action of its own.
type program struct {
	// getpid is the program's verdict for getpid.
	getpid uint32
	// readIP makes getpid's rule read the instruction pointer, which takes
	// the verdict out of the kernel's action cache.
	readIP bool
	// stacked is how many copies are installed, one above the other;
	// 0 counts as one.
	stacked int
}

// allowlist is what the payload's thread may call once filtered: its own
// calls (getpid, the messages to the parent, exit) and those Go's runtime
// may make on its behalf (memory, scheduling, signals).
var allowlist = []uintptr{
	unix.SYS_READ, unix.SYS_WRITE, unix.SYS_MMAP, unix.SYS_MUNMAP,
	unix.SYS_RT_SIGPROCMASK, unix.SYS_RT_SIGRETURN, unix.SYS_SCHED_YIELD,
	unix.SYS_MADVISE, unix.SYS_NANOSLEEP, unix.SYS_GETPID, unix.SYS_SENDMSG,
	unix.SYS_RECVMSG, unix.SYS_EXIT, unix.SYS_GETTID, unix.SYS_FUTEX,
	unix.SYS_CLOCK_GETTIME, unix.SYS_EXIT_GROUP, unix.SYS_TGKILL,
}

// The verdicts of the program for calls off the allowlist, and for a
// getpid from above user space's addresses, which cannot happen.
const (
	denied  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	badArch = unix.SECCOMP_RET_KILL_PROCESS
	// userTop is the high half of the first address above x86_64's user
	// space (2^47).
	userTop = 1 << 15
)

// instructions assembles the program: the architecture check, one jeq per
// call of the allowlist (and of also) in increasing order, as a linear
// compiler lays them out, and getpid's rule.
func (p program) instructions(also ...uintptr) ([]bpf.Instruction, error) {
	var b bpf.Builder
	allow, deny, kill, getpid := b.NewLabel("allow"), b.NewLabel("deny"), b.NewLabel("kill"), b.NewLabel("getpid")
	b.Add(bpf.LoadAbs(bpf.OffsetArch))
	b.JumpIf(bpf.JmpJeq, unix.AUDIT_ARCH_X86_64, bpf.Next, kill)
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	for _, nr := range slices.Sorted(slices.Values(slices.Concat(allowlist, also))) {
		to := allow
		if nr == unix.SYS_GETPID {
			to = getpid
		}
		b.JumpIf(bpf.JmpJeq, uint32(nr), to, bpf.Next)
	}
	b.JumpTo(deny)
	b.Bind(getpid)
	if p.readIP {
		b.Add(bpf.LoadAbs(bpf.OffsetIPHigh))
		b.JumpIf(bpf.JmpJge, userTop, deny, bpf.Next)
	}
	b.Add(bpf.Ret(p.getpid))
	b.Bind(allow)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	b.Bind(deny)
	b.Add(bpf.Ret(denied))
	b.Bind(kill)
	b.Add(bpf.Ret(badArch))
	prog, err := b.Program()
	if err != nil {
		return nil, fmt.Errorf("assemble the payload's program: %w", err)
	}
	return prog, nil
}

// flags are the payload's flags for filter.Install: a listener for the
// supervisor when getpid goes to one. The program applies to the payload's
// thread alone, the only one that calls getpid; the runtime's other
// threads keep their calls.
func (p program) flags() filter.Flags {
	if p.getpid == unix.SECCOMP_RET_USER_NOTIF {
		return filter.FlagNewListener
	}
	return 0
}

// available returns nil when the kernel can install the program, or an
// error wrapping filter.ErrNotSupported.
func (p program) available() error {
	if err := filter.FlagsSupported(p.flags()); err != nil {
		return err
	}
	return filter.ActionAvailable(p.getpid)
}
