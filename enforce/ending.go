package enforce

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/syscalls"
)

// Ending reports whether n is a call a program makes to end, or to say
// why before it does, which syscell lets run whatever the policy says:
// exit and exit_group, and writes to standard error (write and writev on
// descriptor 2), where glibc's fatal messages and a program's own last
// words go. Denying them turns an orderly exit into a crash without a
// message (glibc's _exit falls through to a fault when exit_group
// fails), and none of them can act on anything but the caller's own
// process and its standard error.
func Ending(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 {
		return false
	}
	switch n.Data.Nr {
	case unix.SYS_EXIT, unix.SYS_EXIT_GROUP:
		return true
	case unix.SYS_WRITE, unix.SYS_WRITEV:
		return int32(n.Data.Args[0]) == 2
	}
	return false
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
