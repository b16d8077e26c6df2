package notify

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WakeSignal interrupts a thread waiting in SECCOMP_IOCTL_NOTIF_RECV when
// the listener is closed: the kernel wakes that wait for a notification,
// or once no task uses the filter (Linux 6.6), but not on a close from
// another thread. It is a real-time signal neither Go's runtime nor
// glibc uses. A program that relays every signal it gets (signal.Notify
// with none named) receives it too, and should drop it.
const WakeSignal = unix.Signal(40)

// The kernel's SIG_DFL, SIG_IGN and SA_RESTART, which x/sys/unix lacks.
const (
	sigDefault = 0
	sigIgnore  = 1
	saRestart  = 0x10000000
)

// sigaction is the kernel's struct sigaction on x86_64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// interruptible makes WakeSignal interrupt the receive instead of
// restarting it. Go installs its handler for every signal with
// SA_RESTART, after which the kernel restarts the receive's wait; the
// runtime's own handler is installed again for WakeSignal without the
// flag, so the wait fails with EINTR. The runtime, which never sends
// the signal and relays it only to a program that asked for every
// signal, ignores it.
var interruptible = sync.OnceValue(func() error {
	var old sigaction
	if err := rtSigaction(WakeSignal, nil, &old); err != nil {
		return err
	}
	if old.handler == sigDefault || old.handler == sigIgnore {
		return fmt.Errorf("notify: signal %d has no handler of Go's runtime", WakeSignal)
	}
	act := old
	act.flags &^= saRestart
	return rtSigaction(WakeSignal, &act, nil)
})

func rtSigaction(sig unix.Signal, act, old *sigaction) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if errno != 0 {
		return fmt.Errorf("notify: rt_sigaction(%d): %w", sig, errno)
	}
	return nil
}

// unblockWake lets WakeSignal reach the calling thread, whose mask a
// parent may have passed on with the signal blocked. The caller has
// locked its goroutine to the thread.
func unblockWake() error {
	set := uint64(1) << (WakeSignal - 1)
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	if errno != 0 {
		return fmt.Errorf("notify: unblock signal %d: %w", WakeSignal, errno)
	}
	return nil
}
