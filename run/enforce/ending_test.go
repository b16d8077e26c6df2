package enforce

import (
	"os"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/syscalls"
)

// TestEnding checks which calls a program may always make to end, and
// which are abort's signal to itself.
func TestEnding(t *testing.T) {
	x64, i386 := uint32(syscalls.AuditArchX86_64), uint32(syscalls.AuditArchI386)
	abrt := uint64(unix.SIGABRT)
	// Signal sets in this process's memory, which the notifications
	// below name as their caller's, kept alive to the end.
	var sets []*uint64
	defer runtime.KeepAlive(&sets)
	set := func(sigs ...unix.Signal) uint64 {
		var b uint64
		for _, s := range sigs {
			b |= 1 << (s - 1)
		}
		p := new(uint64)
		*p = b
		sets = append(sets, p)
		return uint64(uintptr(unsafe.Pointer(p)))
	}
	onlyAbort, abortAndMore := set(unix.SIGABRT), set(unix.SIGABRT, unix.SIGTERM)
	unblock, block := uint64(unix.SIG_UNBLOCK), uint64(unix.SIG_BLOCK)
	for _, tc := range []struct {
		name            string
		arch, nr        uint32
		args            [6]uint64
		ending, abortng bool
	}{
		{"exit_group", x64, unix.SYS_EXIT_GROUP, [6]uint64{1}, true, false},
		{"exit", x64, unix.SYS_EXIT, [6]uint64{}, true, false},
		{"write to stderr", x64, unix.SYS_WRITE, [6]uint64{2, 0, 5}, true, false},
		{"writev to stderr", x64, unix.SYS_WRITEV, [6]uint64{2, 0, 2}, true, false},
		{"write to stdout", x64, unix.SYS_WRITE, [6]uint64{1, 0, 5}, false, false},
		{"write to fd 2+2^32", x64, unix.SYS_WRITE, [6]uint64{2 | 1<<32}, true, false},
		{"tgkill SIGABRT", x64, unix.SYS_TGKILL, [6]uint64{1, 1, abrt}, false, true},
		{"tgkill SIGKILL", x64, unix.SYS_TGKILL, [6]uint64{1, 1, uint64(unix.SIGKILL)}, false, false},
		{"kill SIGABRT", x64, unix.SYS_KILL, [6]uint64{1, abrt}, false, true},
		{"tkill SIGABRT", x64, unix.SYS_TKILL, [6]uint64{1, abrt}, false, true},
		{"getpid", x64, unix.SYS_GETPID, [6]uint64{}, false, false},
		{"unblock SIGABRT", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{unblock, onlyAbort, 0, 8}, true, false},
		{"unblock SIGABRT and SIGTERM", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{unblock, abortAndMore, 0, 8}, false, false},
		{"block SIGABRT", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{block, onlyAbort, 0, 8}, false, false},
		{"unblock no set", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{unblock, 0, 0, 8}, false, false},
		{"unblock, an unreadable set", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{unblock, 8, 0, 8}, false, false},
		{"unblock, another set size", x64, unix.SYS_RT_SIGPROCMASK, [6]uint64{unblock, onlyAbort, 0, 16}, false, false},
		{"i386 exit_group", i386, 252, [6]uint64{}, false, false},
	} {
		n := &notify.Notification{Pid: os.Getpid(), Data: bpf.SeccompData{Arch: tc.arch, Nr: tc.nr, Args: tc.args}}
		if got := Ending(n); got != tc.ending {
			t.Errorf("%s: Ending = %v", tc.name, got)
		}
		if got := Aborting(n); got != tc.abortng {
			t.Errorf("%s: Aborting = %v", tc.name, got)
		}
	}
}
