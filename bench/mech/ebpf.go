package mech

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bench/mech/internal/sysenter"
)

// counter is the eBPF mechanism's observer: the program of package
// sysenter, attached for the time of one payload, since every process on
// the machine pays for it while it is.
type counter struct{ *sysenter.Counter }

// newCounter attaches the program. Without the privileges to load it, or
// on a kernel without raw tracepoint programs, the error wraps
// ErrUnavailable.
func newCounter() (observer, error) {
	c, err := sysenter.Attach(unix.SYS_GETPID)
	if errors.Is(err, unix.EPERM) {
		return nil, fmt.Errorf("%w: the kernel refused the eBPF program (loading one takes CAP_BPF and CAP_PERFMON, in practice root): %w", ErrUnavailable, err)
	}
	if err != nil {
		return nil, unavailable(err, ebpf.ErrNotSupported)
	}
	return counter{c}, nil
}

// watch starts counting; the payload of the eBPF mechanism has no program,
// hence no listener.
func (c counter) watch(pid int, _ *os.File) error { return c.Watch(pid) }

func (c counter) seen(pid int) (uint64, error) { return c.Count(pid) }
