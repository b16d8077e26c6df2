package notify

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sizes are the sizes of the kernel's notification structures, which
// grow with new kernels: a receive buffer must be as large as the kernel's
// struct seccomp_notif, and a response is read in the kernel's
// struct seccomp_notif_resp size.
type Sizes struct {
	Notif uint16 // struct seccomp_notif
	Resp  uint16 // struct seccomp_notif_resp
	Data  uint16 // struct seccomp_data
}

// The sizes of the structures as this package lays them out: Linux 5.0's,
// unchanged since.
const (
	notifSize = 80
	respSize  = 24
	dataSize  = 64
)

// GetSizes asks the kernel for the sizes of its notification structures
// (SECCOMP_GET_NOTIF_SIZES, Linux 5.0). The answer is asked once per
// process.
func GetSizes() (Sizes, error) { return getSizes() }

var getSizes = sync.OnceValues(func() (Sizes, error) {
	var s Sizes
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	if errno != 0 {
		return Sizes{}, fmt.Errorf("notify: SECCOMP_GET_NOTIF_SIZES: %w", errno)
	}
	if s.Notif < notifSize || s.Resp < respSize || s.Data < dataSize {
		return Sizes{}, fmt.Errorf("notify: kernel structures of %d, %d and %d bytes are smaller than Linux 5.0's", s.Notif, s.Resp, s.Data)
	}
	return s, nil
})
