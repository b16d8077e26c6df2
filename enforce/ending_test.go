package enforce

import (
	"os"
	"testing"

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
