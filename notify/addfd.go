package notify

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// addfd is struct seccomp_notif_addfd.
type addfd struct {
	id         uint64
	flags      uint32
	srcfd      uint32
	newfd      uint32
	newfdFlags uint32
}

// SendFD answers notification id with a descriptor: a copy of the
// supervisor's fd goes into the caller's descriptor table (close-on-exec
// where cloexec says so) and the call returns its number, in one step
// (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14). It returns that number, or an
// error wrapping ErrNotPending when the notification is no longer
// waiting.
func (l *Listener) SendFD(id uint64, fd int, cloexec bool) (int, error) {
	a := addfd{id: id, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd)}
	if cloexec {
		a.newfdFlags = unix.O_CLOEXEC
	}
	n, err := l.call(unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&a))
	if err != nil {
		return -1, fmt.Errorf("notify: send a descriptor to %d: %w", id, err)
	}
	return int(n), nil
}
