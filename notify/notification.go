package notify

import (
	"encoding/binary"
	"syscall"
	"time"

	"github.com/syscell/syscell/bpf"
)

// Notification is a system call suspended until the supervisor answers it.
type Notification struct {
	// ID names the notification in Respond and Valid. It is unique for the
	// listener's lifetime.
	ID uint64
	// Pid is the id of the calling thread in the supervisor's PID
	// namespace, 0 when the thread has none there.
	Pid int
	// Data is what the filter saw: number, ABI, instruction pointer (the
	// address just after the system call instruction) and arguments.
	Data bpf.SeccompData
	// Received is when the supervisor received it.
	Received time.Time
}

// Response answers a notification.
type Response struct {
	// ID is the notification's.
	ID uint64
	// Val is what the call returns when Errno is 0 and Continue false.
	Val int64
	// Errno, when set, is the errno the call fails with.
	Errno syscall.Errno
	// Continue has the kernel run the call as if the filter had allowed
	// it (SECCOMP_USER_NOTIF_FLAG_CONTINUE); Val and Errno must be 0.
	Continue bool
}

// Layouts of struct seccomp_notif (id, pid, flags, then struct seccomp_data)
// and struct seccomp_notif_resp (id, val, error, flags), little-endian.
const (
	offID    = 0
	offPid   = 8
	offData  = 16
	offNr    = offData + bpf.OffsetNr
	offArch  = offData + bpf.OffsetArch
	offIP    = offData + bpf.OffsetIPLow
	offArgs  = offData + bpf.OffsetArgs
	offVal   = 8
	offError = 16
	offFlags = 20
)

// userNotifFlagContinue is SECCOMP_USER_NOTIF_FLAG_CONTINUE.
const userNotifFlagContinue = 1

// decodeNotification reads the leading, Linux 5.0 part of a struct
// seccomp_notif; later kernels only append to it.
func decodeNotification(b []byte) *Notification {
	le := binary.LittleEndian
	n := &Notification{
		ID:  le.Uint64(b[offID:]),
		Pid: int(le.Uint32(b[offPid:])),
		Data: bpf.SeccompData{
			Nr:   le.Uint32(b[offNr:]),
			Arch: le.Uint32(b[offArch:]),
			IP:   le.Uint64(b[offIP:]),
		},
	}
	for i := range n.Data.Args {
		n.Data.Args[i] = le.Uint64(b[offArgs+8*i:])
	}
	return n
}

// encode writes r into b, a zeroed buffer of the kernel's response size.
// The kernel takes a negative errno.
func (r Response) encode(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[offID:], r.ID)
	le.PutUint64(b[offVal:], uint64(r.Val))
	le.PutUint32(b[offError:], uint32(-int32(r.Errno)))
	if r.Continue {
		le.PutUint32(b[offFlags:], userNotifFlagContinue)
	}
}
