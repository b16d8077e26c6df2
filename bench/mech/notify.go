package mech

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotif is the kernel's struct seccomp_notif: a call waiting for
// the supervisor.
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	// data is struct seccomp_data; the supervisor reads the number only.
	nr   int32
	data [60]byte
}

// seccompNotifResp is the kernel's struct seccomp_notif_resp: the answer.
type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// supervisor answers the payload's user notifications, in the parent: it
// lets every call continue and counts the getpid calls. It is the least a
// supervisor can do, so that what it costs is the mechanism's own.
type supervisor struct {
	listener *os.File
	// finished is closed when the supervisor is done, which it is once
	// the payload has exited; calls and err are then what it did.
	finished chan struct{}
	calls    uint64
	err      error
}

func (s *supervisor) watch(_ int, listener *os.File) error {
	if listener == nil {
		return errors.New("the payload sent no notification listener")
	}
	s.listener, s.finished = listener, make(chan struct{})
	go func() {
		// A thread of its own, as a supervisor's loop has: the
		// scheduler need not hand the goroutine around between calls.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(s.finished)
		s.calls, s.err = answer(int(listener.Fd()))
	}()
	return nil
}

func (s *supervisor) seen(int) (uint64, error) {
	<-s.finished
	return s.calls, s.err
}

// Close closes the listener once the supervisor is done with it: call it
// once the payload has exited.
func (s *supervisor) Close() error {
	if s.listener == nil {
		return nil
	}
	<-s.finished
	return s.listener.Close()
}

// answer answers the notifications of listener until the payload has
// exited, and returns how many were for getpid. Where the kernel has
// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6), it waits in
// SECCOMP_IOCTL_NOTIF_RECV, woken on the caller's CPU, which the caller,
// going to sleep, hands straight to it: the least a notification's round
// trip can cost, the floor a supervisor is measured against. Linux 6.6 also
// wakes RECV, with ENOENT, once the last process of the filter exits; older
// kernels leave it asleep for ever, so there it waits in poll(2), which they
// wake with POLLHUP.
func answer(listener int) (uint64, error) {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	blocking := errno == 0
	var n uint64
	for {
		if !blocking || n == 0 {
			// Until the first call, the payload may still be getting
			// ready: poll, which sees it die before it calls.
			fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, -1); err != nil {
				if err == unix.EINTR {
					continue
				}
				return n, fmt.Errorf("supervisor: poll: %w", err)
			}
			if fds[0].Revents&unix.POLLIN == 0 {
				return n, nil
			}
		}
		nr, err := continueCall(listener)
		if err != nil {
			return n, err
		}
		switch {
		case nr == unix.SYS_GETPID:
			n++
		case nr < 0 && orphaned(listener):
			return n, nil
		}
	}
}

// orphaned says whether no process uses the listener's filter any more.
func orphaned(listener int) bool {
	fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, 0)
	return err == nil && fds[0].Revents&unix.POLLHUP != 0
}

// continueCall receives one notification and lets its call run, and
// returns the call's number. A call whose caller died in between (ENOENT)
// is skipped, as -1.
func continueCall(listener int) (int32, error) {
	var req seccompNotif // RECV insists on a zeroed structure
	if err := ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
		if err == unix.ENOENT {
			return -1, nil
		}
		return -1, fmt.Errorf("supervisor: receive: %w", err)
	}
	resp := seccompNotifResp{id: req.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if err := ioctl(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil {
		if err == unix.ENOENT {
			return -1, nil
		}
		return -1, fmt.Errorf("supervisor: send: %w", err)
	}
	return req.nr, nil
}

// ioctl makes an ioctl(2) whose argument is a pointer.
func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
