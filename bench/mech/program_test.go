package mech

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// TestPrograms runs the payload's programs in syscell's interpreter: the
// verdicts, and whether the kernel's action cache holds getpid's.
func TestPrograms(t *testing.T) {
	const (
		x86_64 = unix.AUDIT_ARCH_X86_64
		i386   = unix.AUDIT_ARCH_I386
		allow  = unix.SECCOMP_RET_ALLOW
		x32    = 0x40000000
	)
	user, kernel := uint64(0x4a_1234), uint64(0xffff_ffff_8100_0000)
	for _, tc := range []struct {
		m         Mechanism
		arch, nr  uint32
		ip        uint64
		want      uint32
		cacheable bool
	}{
		{Seccomp, x86_64, unix.SYS_GETPID, user, allow, true},
		{Seccomp, x86_64, unix.SYS_FUTEX, user, allow, true},
		{Seccomp, x86_64, unix.SYS_SOCKET, user, denied, false},
		{Seccomp, x86_64, x32 | unix.SYS_GETPID, user, denied, false},
		{Seccomp, i386, 20, user, badArch, false}, // i386's getpid
		{SeccompUncached, x86_64, unix.SYS_GETPID, user, allow, false},
		{SeccompUncached, x86_64, unix.SYS_GETPID, kernel, denied, false},
		{SeccompUncached, x86_64, unix.SYS_WRITE, user, allow, true},
		{SeccompStacked, x86_64, unix.SYS_GETPID, user, allow, false},
		{UserNotif, x86_64, unix.SYS_GETPID, user, unix.SECCOMP_RET_USER_NOTIF, false},
		{UserNotif, x86_64, unix.SYS_SENDMSG, user, allow, true},
		{SeccompTrace, x86_64, unix.SYS_GETPID, user, unix.SECCOMP_RET_TRACE, false},
		{SeccompTrace, x86_64, unix.SYS_EXIT_GROUP, user, allow, true},
	} {
		prog, err := specs[tc.m].filter.instructions()
		if err != nil {
			t.Fatal(err)
		}
		res, err := bpf.Run(prog, &bpf.SeccompData{Nr: tc.nr, Arch: tc.arch, IP: tc.ip})
		if err != nil {
			t.Fatal(err)
		}
		if res.Ret != tc.want || res.KernelCacheable != tc.cacheable {
			t.Errorf("%s: call %#x of arch %#x from %#x: %s, cacheable %t; want %s, cacheable %t", tc.m, tc.nr, tc.arch, tc.ip,
				filter.ActionName(res.Ret), res.KernelCacheable, filter.ActionName(tc.want), tc.cacheable)
		}
	}
}

func TestProgramFlags(t *testing.T) {
	for m, want := range map[Mechanism]filter.Flags{
		Seccomp:         0,
		SeccompUncached: 0,
		UserNotif:       filter.FlagNewListener,
		SeccompTrace:    0,
	} {
		if got := specs[m].filter.flags(); got != want {
			t.Errorf("%s: flags %s, want %s", m, got, want)
		}
	}
}

// TestNotifLayout checks the structures of the supervisor against the
// sizes that the kernel's ioctl numbers encode.
func TestNotifLayout(t *testing.T) {
	size := func(req uint) uintptr { return uintptr(req>>16) & 0x3fff }
	if got, want := unsafe.Sizeof(seccompNotif{}), size(unix.SECCOMP_IOCTL_NOTIF_RECV); got != want {
		t.Errorf("seccompNotif has %d bytes, the kernel's %d", got, want)
	}
	if got, want := unsafe.Sizeof(seccompNotifResp{}), size(unix.SECCOMP_IOCTL_NOTIF_SEND); got != want {
		t.Errorf("seccompNotifResp has %d bytes, the kernel's %d", got, want)
	}
	if got := unsafe.Offsetof(seccompNotif{}.nr); got != 16 {
		t.Errorf("seccompNotif.nr at offset %d, the kernel's at 16", got)
	}
}
