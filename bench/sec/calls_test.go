package sec_test

import (
	"context"
	"testing"
	"time"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bench/sec"
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// TestDefaultCallsReturnAtOnce makes every default call once and checks
// that it failed the harmless way it is meant to.
func TestDefaultCallsReturnAtOnce(t *testing.T) {
	filtertest.RequireSeccomp(t)
	want := map[string]unix.Errno{
		"futex":       unix.ENOSYS,
		"sendmmsg":    unix.EBADF,
		"fstat":       unix.EBADF,
		"ppoll":       unix.EINVAL,
		"fsync":       unix.EBADF,
		"pwrite64":    unix.EBADF,
		"epoll_pwait": unix.EBADF,
		"close":       unix.EBADF,
		"getpid":      0,
		"read":        unix.EBADF,
	}
	var calls []filter.Syscall
	defaults := sec.DefaultCalls()
	for _, c := range defaults {
		calls = append(calls, filter.Syscall{Nr: c.Nr, Args: c.Args})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := filter.Child{}.Probe(ctx, []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ALLOW)}, calls)
	if err != nil {
		t.Fatal(err)
	}
	if len(defaults) != len(want) {
		t.Errorf("%d default calls, %d expected", len(defaults), len(want))
	}
	for i, c := range defaults {
		if e, ok := want[c.Name]; !ok || res[i].Errno != e {
			t.Errorf("%s: returned %+v, want errno %d", c.Name, res[i], e)
		}
	}
}
