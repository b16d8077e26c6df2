package enforce

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/syscalls"
)

// Ending reports whether n is a call a program makes to end, or to say
// why before it does, which syscell lets run whatever the policy says:
// exit and exit_group, writes to standard error (write and writev on
// descriptor 2), where glibc's fatal messages and a program's own last
// words go, and abort's unblocking of SIGABRT (unblocksAbort). Denying
// them turns an orderly exit into a crash without a message (glibc's
// _exit falls through to a fault when exit_group fails, abort to one
// when SIGABRT stays blocked), and none of them can act on anything but
// the caller's own process and its standard error.
func Ending(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 {
		return false
	}
	switch n.Data.Nr {
	case unix.SYS_EXIT, unix.SYS_EXIT_GROUP:
		return true
	case unix.SYS_WRITE, unix.SYS_WRITEV:
		return int32(n.Data.Args[0]) == 2
	case unix.SYS_RT_SIGPROCMASK:
		return unblocksAbort(n)
	}
	return false
}

// sigsetSize is the kernel's signal set, the size glibc passes.
const sigsetSize = 8

// unblocksAbort says whether n is abort's first step: rt_sigprocmask
// unblocking SIGABRT alone, which a program that blocks it (one that
// takes its signals with sigwait or a signalfd) needs to die of it. The
// set is read from the caller: changed once read, it would unblock
// other signals of the calling thread, which acts on nothing else.
func unblocksAbort(n *notify.Notification) bool {
	if n.Data.Args[0] != unix.SIG_UNBLOCK || n.Data.Args[1] == 0 || n.Data.Args[3] != sigsetSize {
		return false
	}
	var set [sigsetSize]byte
	local := []unix.Iovec{{Base: &set[0], Len: sigsetSize}}
	remote := []unix.RemoteIovec{{Base: uintptr(n.Data.Args[1]), Len: sigsetSize}}
	if got, err := unix.ProcessVMReadv(int(n.Pid), local, remote, 0); err != nil || got != sigsetSize {
		return false
	}
	return binary.LittleEndian.Uint64(set[:]) == 1<<(unix.SIGABRT-1)
}

// Aborting reports whether n is abort's signal to itself: SIGABRT sent
// by tgkill, tkill or kill. Its target is not read: glibc's raise asks
// getpid and gettid for it first, which the policy may deny, so Abort
// delivers the signal to the calling thread, whoever the call named.
func Aborting(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 {
		return false
	}
	switch n.Data.Nr {
	case unix.SYS_TGKILL:
		return n.Data.Args[2] == uint64(unix.SIGABRT)
	case unix.SYS_TKILL, unix.SYS_KILL:
		return n.Data.Args[1] == uint64(unix.SIGABRT)
	}
	return false
}

// Abort answers an Aborting call: it sends SIGABRT to the calling thread
// while the call waits, and lets the call return 0, so that the signal
// is taken as the call returns, as abort expects.
func Abort(l *notify.Listener, n *notify.Notification) error {
	tgid, err := processOf(n.Pid)
	if err == nil {
		err = unix.Tgkill(tgid, n.Pid, unix.SIGABRT)
	}
	if err != nil {
		return ignoreGone(l.Respond(notify.Response{ID: n.ID, Errno: unix.EPERM}))
	}
	return ignoreGone(l.Respond(notify.Response{ID: n.ID}))
}

// ignoreGone drops the error of a notification whose caller stopped
// waiting.
func ignoreGone(err error) error {
	if errors.Is(err, notify.ErrNotPending) {
		return nil
	}
	return err
}
