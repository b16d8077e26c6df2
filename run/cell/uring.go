package cell

import (
	"errors"
	"fmt"
	"maps"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/iouring"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// An io_uring ring performs the operations its submission queue asks
// for, and the queue is memory every library of the process can write:
// a library that may not make a directory could write a mkdirat into a
// ring another library set up, and let that library's submission carry
// it. So a ring may be set up only by a compartment the policy lets call
// io_uring_setup, and only where the policy names the operations rings
// may make (policy.IOURing), which are then all a ring can make,
// whichever library writes its queue. Every io_uring_setup the rules
// may allow is notified; the supervisor sets up the ring itself,
// restricted to those operations (IORING_REGISTER_RESTRICTIONS, which a
// ring takes only before it is enabled, so that no code of the program
// ever holds the ring unrestricted), and hands it to the caller as the
// call's result.
// A ring's operations run in the process that submits them, the
// program. Flags that would tie the ring to the supervisor (a kernel
// polling thread, a single issuer) are refused with EINVAL, as a kernel
// without them would refuse them; programs fall back to rings without.

// ringSetup is an io_uring_setup the supervisor makes for its caller.
type ringSetup struct {
	entries uint32
	params  iouring.Params
}

// errNoRingOps is why a ring is refused to a compartment the policy lets
// call io_uring_setup.
var errNoRingOps = errors.New("the policy names no io_uring operation (io_uring = [...]) a ring could make")

// ringOps resolves the operations p lets rings make.
func ringOps(p *policy.Policy) []iouring.Op {
	var ops []iouring.Op
	for _, name := range p.IOURing {
		if op, ok := iouring.Lookup(name); ok {
			ops = append(ops, op)
		}
	}
	return ops
}

// notifyRingSetup returns a copy of t that notifies every io_uring_setup
// t may let run; one it denies stays the kernel's to deny.
func notifyRingSetup(t *policy.Table) *policy.Table {
	if !mayRun(t, unix.SYS_IO_URING_SETUP) {
		return t
	}
	out := *t
	out.Syscalls = maps.Clone(t.Syscalls)
	out.Syscalls[unix.SYS_IO_URING_SETUP] = []policy.Branch{{Action: policy.Action{Kind: policy.UserNotify}}}
	return &out
}

// isRingSetup says whether n sets up an io_uring ring.
func isRingSetup(n *notify.Notification) bool {
	return n.Data.Arch == syscalls.AuditArchX86_64 && n.Data.Nr == unix.SYS_IO_URING_SETUP
}

// prepareRing reads the ring an allowed io_uring_setup asks for. It
// returns nil and the call's verdict where the supervisor will not set
// the ring up: audit mode lets the call run, a policy that names no
// operation refuses it (EPERM), and so do flags a ring set up for
// another process cannot have (EINVAL) and parameters the caller's
// memory does not hold (EFAULT); why is returned.
func (s *supervisor) prepareRing(n *notify.Notification) (*ringSetup, policy.Action, error) {
	if s.mode == enforce.Audit {
		return nil, policy.ActAllow, nil
	}
	if len(s.ringOps) == 0 {
		return nil, policy.ActEPERM, errNoRingOps
	}
	r := &ringSetup{entries: uint32(n.Data.Args[0])}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&r.params)), iouring.ParamsSize)
	if err := (attribute.ProcessMemory{Pid: int(n.Pid)}).Read(n.Data.Args[1], b); err != nil {
		return nil, errnoAction(unix.EFAULT), fmt.Errorf("read the ring's parameters: %w", err)
	}
	if err := iouring.Check(&r.params); err != nil {
		return nil, errnoAction(unix.EINVAL), err
	}
	return r, policy.ActAllow, nil
}

// setupRing sets up the ring r for the caller of n, restricted to the
// policy's operations, writes back its parameters and answers the call
// with it. What the kernel refuses, the call fails with.
func (s *supervisor) setupRing(n *notify.Notification, r *ringSetup) error {
	fd, err := iouring.Restricted(r.entries, &r.params, s.ringOps)
	var errno unix.Errno
	if errors.As(err, &errno) {
		return s.l.Respond(notify.Response{ID: n.ID, Errno: errno})
	}
	if err != nil {
		return s.l.Respond(notify.Response{ID: n.ID, Errno: unix.EINVAL})
	}
	defer unix.Close(fd)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&r.params)), iouring.ParamsSize)
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(n.Data.Args[1]), Len: len(b)}}
	if _, err := unix.ProcessVMWritev(int(n.Pid), local, remote, 0); err != nil {
		return s.l.Respond(notify.Response{ID: n.ID, Errno: unix.EFAULT})
	}
	_, err = s.l.SendFD(n.ID, fd, true)
	return err
}

func errnoAction(e unix.Errno) policy.Action {
	return policy.Action{Kind: policy.Errno, Data: uint16(e)}
}
