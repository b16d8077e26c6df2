package notify

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNoTasks is returned by Receive once every task that used the filter
// has exited: no notification can come any more.
var ErrNoTasks = errors.New("notify: no task uses the filter any more")

// ErrNotPending is wrapped by the errors of Respond and Valid when the
// notification is no longer waiting for an answer: its thread was killed,
// or a signal interrupted the call, which the thread may then make again.
var ErrNotPending = errors.New("notification not pending")

// Listener is the supervisor's end of a filter's notifications. Its
// methods may be called from several goroutines.
type Listener struct {
	f      *os.File
	conn   syscall.RawConn
	sizes  Sizes
	closed atomic.Bool
}

// NewListener takes ownership of fd, a listener returned by filter.Install
// or received from the process that installed the filter. Receive waits in
// Go's network poller, so a blocked Receive holds no thread.
func NewListener(fd int) (*Listener, error) {
	sizes, err := GetSizes()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	// The poller only takes descriptors that are already non-blocking. The
	// flag does not change the ioctls; Receive polls before it receives.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("notify: listener %d: %w", fd, err)
	}
	f := os.NewFile(uintptr(fd), "seccomp-listener")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("notify: listener %d: %w", fd, err)
	}
	return &Listener{f: f, conn: conn, sizes: sizes}, nil
}

// Close closes the listener. Calls still waiting, and every call the
// filter notifies from now on, fail with ENOSYS; a blocked Receive returns
// an error wrapping os.ErrClosed.
func (l *Listener) Close() error {
	l.closed.Store(true)
	return l.f.Close()
}

// connErr names the error of an operation on a closed listener the way
// package os does: the raw connection reports the poller's own error.
func (l *Listener) connErr(err error) error {
	if l.closed.Load() {
		return os.ErrClosed
	}
	return err
}

// Receive waits for the next notification. It returns ErrNoTasks when
// no task uses the filter any more.
func (l *Listener) Receive() (*Notification, error) {
	buf := make([]byte, l.sizes.Notif)
	var n *Notification
	var opErr error
	err := l.conn.Read(func(fd uintptr) bool {
		n, opErr = l.tryReceive(int(fd), buf)
		return n != nil || opErr != nil
	})
	if err != nil {
		err = l.connErr(err)
	} else {
		err = opErr
	}
	if err != nil && !errors.Is(err, ErrNoTasks) {
		return nil, fmt.Errorf("notify: receive: %w", err)
	}
	return n, err
}

// tryReceive receives a notification if one is queued, and returns nil,
// nil when the caller should wait for the listener to become readable.
// SECCOMP_IOCTL_NOTIF_RECV ignores O_NONBLOCK and would block, so the
// queue is polled first.
func (l *Listener) tryReceive(fd int, buf []byte) (*Notification, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if _, err := unix.Poll(pfd, 0); err != nil {
		if errors.Is(err, unix.EINTR) {
			return nil, nil
		}
		return nil, fmt.Errorf("poll: %w", err)
	}
	switch {
	case pfd[0].Revents&unix.POLLIN != 0:
	case pfd[0].Revents&unix.POLLHUP != 0:
		return nil, ErrNoTasks
	default:
		return nil, nil
	}
	// The kernel demands a zeroed buffer, so that fields it may add later
	// start out empty.
	clear(buf)
	err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&buf[0]))
	// ENOENT: the caller was interrupted between poll and receive, and its
	// notification withdrawn.
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeNotification(buf), nil
}

// Serve passes every notification to answer until no task uses the filter
// or the listener is closed, and then returns nil. When Receive or answer
// fails, Serve closes the listener, so that the calls nobody can answer any
// more fail with ENOSYS instead of waiting forever, and returns the error.
func (l *Listener) Serve(answer func(*Notification) error) error {
	for {
		n, err := l.Receive()
		if errors.Is(err, ErrNoTasks) || errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err == nil {
			err = answer(n)
		}
		if err != nil {
			l.Close()
			return err
		}
	}
}

// Respond answers a notification. It returns an error wrapping
// ErrNotPending when the notification is no longer waiting.
func (l *Listener) Respond(r Response) error {
	buf := make([]byte, l.sizes.Resp)
	r.encode(buf)
	if err := l.control(unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&buf[0])); err != nil {
		return fmt.Errorf("notify: respond to %d: %w", r.ID, err)
	}
	return nil
}

// Valid returns nil while notification id is waiting for an answer, and an
// error wrapping ErrNotPending once it is not. A supervisor that acts on
// the caller by its Pid (reads its memory, signals it) checks Valid after
// taking hold of the process, which proves that the pid was not reused in
// between.
func (l *Listener) Valid(id uint64) error {
	if err := l.control(unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)); err != nil {
		return fmt.Errorf("notify: notification %d: %w", id, err)
	}
	return nil
}

// control runs a non-blocking ioctl on the listener, translating ENOENT.
func (l *Listener) control(req uint, arg unsafe.Pointer) error {
	var opErr error
	if err := l.conn.Control(func(fd uintptr) { opErr = ioctl(int(fd), req, arg) }); err != nil {
		return l.connErr(err)
	}
	if errors.Is(opErr, unix.ENOENT) {
		return fmt.Errorf("%w (%w)", ErrNotPending, opErr)
	}
	return opErr
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}
