package filter

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNotSupported is wrapped by the errors of this package when the running
// kernel lacks a seccomp feature. Test for it with errors.Is.
var ErrNotSupported = errors.New("not supported")

// Supported returns nil when the kernel can install seccomp filters, or an
// error wrapping ErrNotSupported when it cannot (a kernel built without
// CONFIG_SECCOMP_FILTER, or older than the seccomp system call of Linux
// 3.17). The probe runs once per process.
func Supported() error { return supported() }

var supported = sync.OnceValue(func() error {
	if err := probeFilterFlags(0); err != nil {
		return fmt.Errorf("seccomp filter mode: %w", err)
	}
	return nil
})

// FlagsSupported returns nil when Install accepts flags on this kernel, or an
// error wrapping ErrNotSupported when the kernel does not know one of them.
// A combination the kernel refuses on every version is an error wrapping
// EINVAL instead.
func FlagsSupported(flags Flags) error {
	if err := Supported(); err != nil {
		return err
	}
	if err := flags.check(); err != nil {
		return err
	}
	if err := probeFilterFlags(flags); err != nil {
		return fmt.Errorf("seccomp filter flags %s: %w", flags, err)
	}
	return nil
}

// probeFilterFlags asks the kernel to install the program at address 0. The
// kernel validates flags before it reads the program, so EFAULT proves that
// it understands flags, and nothing gets installed either way. EFAULT also
// comes before the no_new_privs check, so the probe needs no privilege.
func probeFilterFlags(flags Flags) error {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), 0)
	switch errno {
	case unix.EFAULT:
		return nil
	case unix.EINVAL, unix.ENOSYS:
		return fmt.Errorf("%w (%w)", ErrNotSupported, errno)
	default:
		return fmt.Errorf("probe with a null program: %w", errno)
	}
}

// ActionAvailable returns nil when the kernel knows the action of ret (its
// data bits are ignored), or an error wrapping ErrNotSupported when it does
// not, or when it cannot tell (SECCOMP_GET_ACTION_AVAIL is Linux 4.14).
func ActionAvailable(ret uint32) error {
	action := ret & unix.SECCOMP_RET_ACTION_FULL
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	switch errno {
	case 0:
		return nil
	case unix.EOPNOTSUPP:
		return fmt.Errorf("seccomp action %s: %w", ActionName(action), ErrNotSupported)
	case unix.EINVAL, unix.ENOSYS:
		return fmt.Errorf("seccomp action %s: SECCOMP_GET_ACTION_AVAIL: %w (%w)", ActionName(action), ErrNotSupported, errno)
	default:
		return fmt.Errorf("seccomp action %s: SECCOMP_GET_ACTION_AVAIL: %w", ActionName(action), errno)
	}
}

// ActionName names the action of a filter's return value the way the kernel
// documentation does, with its data when the action has any: "ALLOW",
// "ERRNO(1)", "KILL_PROCESS".
func ActionName(ret uint32) string {
	data := ret & unix.SECCOMP_RET_DATA
	switch ret & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_KILL_THREAD:
		return "KILL_THREAD"
	case unix.SECCOMP_RET_TRAP:
		return "TRAP"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf("ERRNO(%d)", data)
	case unix.SECCOMP_RET_USER_NOTIF:
		return "USER_NOTIF"
	case unix.SECCOMP_RET_TRACE:
		return fmt.Sprintf("TRACE(%d)", data)
	case unix.SECCOMP_RET_LOG:
		return "LOG"
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	}
	return fmt.Sprintf("%#08x", ret)
}
