package notify

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
//
// A notified thread waits for the supervisor, so the time from the call
// to the answer is what matters, not the supervisor's throughput: Serve
// and Receive wait on a thread of their own, outside Go's network poller,
// whose extra hops (an epoll thread, then the goroutine) cost more than a
// bare round trip; and the kernel is asked to wake that thread on the
// caller's CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6), which the
// caller, going to sleep, hands straight to it. Where the kernel has that
// flag, the thread waits in SECCOMP_IOCTL_NOTIF_RECV itself, which the
// same kernels wake once no task uses the filter, and Close interrupts
// with WakeSignal; elsewhere it waits in poll(2), a system call more a
// notification.
type Listener struct {
	fd    int
	sizes Sizes
	// blocking says the receive itself is the wait (the kernel has the
	// synchronous wake-up, and WakeSignal interrupts the wait).
	blocking bool
	// wake, an eventfd, wakes the waits in poll when Close is called:
	// the kernel does not wake poll on a close from another thread.
	wake int
	// closing is set by Close before it interrupts the receivers, the
	// threads waiting in SECCOMP_IOCTL_NOTIF_RECV, by their thread IDs.
	closing   atomic.Bool
	rmu       sync.Mutex
	receivers map[int]bool
	// left, while Close waits for receivers, is closed when the last
	// one leaves.
	left chan struct{}
	// mu is held for reading by every operation on fd and for writing by
	// Close, which closes it: a descriptor number is never used once
	// closed, when it may already name another file.
	mu     sync.RWMutex
	closed bool
}

// NewListener takes ownership of fd, a listener returned by filter.Install
// or received from the process that installed the filter.
func NewListener(fd int) (*Listener, error) {
	sizes, err := GetSizes()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("notify: eventfd: %w", err)
	}
	// Where the kernel lacks the flag, the wake-up is an ordinary one.
	sync := ioctlValue(fd, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == nil
	blocking := sync && interruptible() == nil
	return &Listener{fd: fd, sizes: sizes, wake: wake, blocking: blocking, receivers: map[int]bool{}}, nil
}

// Close closes the listener. Calls still waiting, and every call the
// filter notifies from now on, fail with ENOSYS; a waiting Receive or
// Serve returns.
func (l *Listener) Close() error {
	l.closing.Store(true)
	one := [8]byte{1}
	unix.Write(l.wake, one[:])
	l.interruptReceivers()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	return errors.Join(unix.Close(l.fd), unix.Close(l.wake))
}

// Receive waits for the next notification. It returns ErrNoTasks when
// no task uses the filter any more, and an error wrapping os.ErrClosed
// once the listener is closed.
func (l *Listener) Receive() (*Notification, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.prepareThread(); err != nil {
		return nil, err
	}
	return l.receive(make([]byte, l.sizes.Notif), unix.Gettid())
}

// prepareThread readies the calling thread, locked to its goroutine, to
// receive.
func (l *Listener) prepareThread() error {
	if !l.blocking {
		return nil
	}
	return unblockWake()
}

// receive waits for a notification and receives it into buf, on the
// calling thread, tid, which prepareThread readied.
func (l *Listener) receive(buf []byte, tid int) (*Notification, error) {
	for {
		n, err := l.tryReceive(buf, tid)
		if n != nil || err != nil {
			if err != nil && !errors.Is(err, ErrNoTasks) {
				err = fmt.Errorf("notify: receive: %w", err)
			}
			return n, err
		}
	}
}

// tryReceive waits until a notification is queued, the filter has no
// task left or the listener is closed, and receives the notification on
// thread tid, the caller's. It returns nil, nil where the caller should
// wait again.
func (l *Listener) tryReceive(buf []byte, tid int) (*Notification, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, os.ErrClosed
	}
	if l.blocking {
		return l.receiveWaiting(buf, tid)
	}
	switch err := l.poll(); {
	case errors.Is(err, errWaitAgain):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return l.recv(buf)
}

// receiveWaiting waits in the receive itself. The thread is listed as a
// receiver before it looks at closing, and Close sets closing before it
// looks for receivers, so that either this thread sees it or Close
// signals it, again until it has left.
func (l *Listener) receiveWaiting(buf []byte, tid int) (*Notification, error) {
	l.enter(tid)
	defer l.leave(tid)
	if l.closing.Load() {
		return nil, os.ErrClosed
	}
	n, err := l.recv(buf)
	if n == nil && err == nil && l.orphaned() {
		return nil, ErrNoTasks
	}
	return n, err
}

// errWaitAgain is poll's answer when no notification is queued.
var errWaitAgain = errors.New("no notification")

// poll waits in poll(2) until a notification is queued, and returns nil
// then, ErrNoTasks, os.ErrClosed or errWaitAgain.
func (l *Listener) poll() error {
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}, {Fd: int32(l.wake), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, -1); err != nil {
		if errors.Is(err, unix.EINTR) {
			return errWaitAgain
		}
		return fmt.Errorf("poll: %w", err)
	}
	switch {
	case fds[1].Revents != 0:
		return os.ErrClosed
	case fds[0].Revents&unix.POLLIN != 0:
		return nil
	case fds[0].Revents&unix.POLLHUP != 0:
		return ErrNoTasks
	}
	return errWaitAgain
}

// recv receives a notification. It returns nil, nil where there was
// none to receive: its caller was interrupted meanwhile, or the filter
// has no task left (ENOENT), or a signal interrupted the wait (EINTR).
func (l *Listener) recv(buf []byte) (*Notification, error) {
	// The kernel demands a zeroed buffer, so that fields it may add later
	// start out empty.
	clear(buf)
	err := ioctl(l.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&buf[0]))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := decodeNotification(buf)
	n.Received = time.Now()
	return n, nil
}

// orphaned says whether no task uses the filter any more.
func (l *Listener) orphaned() bool {
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, 0)
	return err == nil && fds[0].Revents&unix.POLLHUP != 0
}

func (l *Listener) enter(tid int) {
	l.rmu.Lock()
	l.receivers[tid] = true
	l.rmu.Unlock()
}

func (l *Listener) leave(tid int) {
	l.rmu.Lock()
	delete(l.receivers, tid)
	if len(l.receivers) == 0 && l.left != nil {
		close(l.left)
		l.left = nil
	}
	l.rmu.Unlock()
}

// interruptReceivers signals each thread waiting in the receive until
// none is left. A thread signalled just before it enters the wait enters
// it all the same, hence the repeats; each waits for the receivers to
// leave, which they do within microseconds of a signal in the wait (a
// sleep instead took a millisecond of Go's timers at some runs' end).
func (l *Listener) interruptReceivers() {
	pid := unix.Getpid()
	for {
		l.rmu.Lock()
		tids := make([]int, 0, len(l.receivers))
		for tid := range l.receivers {
			tids = append(tids, tid)
		}
		if len(tids) > 0 && l.left == nil {
			l.left = make(chan struct{})
		}
		left := l.left
		l.rmu.Unlock()
		if len(tids) == 0 {
			return
		}
		for _, tid := range tids {
			unix.Tgkill(pid, tid, WakeSignal)
		}
		select {
		case <-left:
		case <-time.After(time.Millisecond):
		}
	}
}

// Serve passes every notification to answer until no task uses the
// filter or the listener is closed, and then returns nil. It receives on
// a thread of its own, and answer runs there: a notification is received
// only once answer has returned. When receiving or answer fails, Serve
// closes the listener, so that the calls nobody can answer any more fail
// with ENOSYS instead of waiting forever, and returns the error.
func (l *Listener) Serve(answer func(*Notification) error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := l.prepareThread(); err != nil {
		l.Close()
		return err
	}
	buf, tid := make([]byte, l.sizes.Notif), unix.Gettid()
	for {
		n, err := l.receive(buf, tid)
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

// Pending says whether a notification is queued that nobody has
// received yet.
func (l *Listener) Pending() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

// Respond answers a notification. It returns an error wrapping
// ErrNotPending when the notification is no longer waiting.
func (l *Listener) Respond(r Response) error {
	// The kernel reads a response of its own size, which may grow.
	var stack [64]byte
	buf := stack[:]
	if int(l.sizes.Resp) > len(buf) {
		buf = make([]byte, l.sizes.Resp)
	}
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

// control runs an ioctl on the listener, translating ENOENT.
func (l *Listener) control(req uint, arg unsafe.Pointer) error {
	_, err := l.call(req, arg)
	return err
}

// call runs an ioctl on the listener and returns its result, translating
// ENOENT.
func (l *Listener) call(req uint, arg unsafe.Pointer) (uintptr, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, os.ErrClosed
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), uintptr(req), uintptr(arg))
	switch {
	case errno == unix.ENOENT:
		return 0, fmt.Errorf("%w (%w)", ErrNotPending, errno)
	case errno != 0:
		return 0, errno
	}
	return r, nil
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	return ioctlValue(fd, req, uintptr(arg))
}

func ioctlValue(fd int, req uint, arg uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), arg)
	if errno != 0 {
		return syscall.Errno(errno)
	}
	return nil
}
