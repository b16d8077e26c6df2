//go:build linux

package sysenter

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// attach attaches a counter of getpid, or skips, saying why, where this
// process may not load eBPF programs.
func attach(t *testing.T) *Counter {
	t.Helper()
	c, err := Attach(unix.SYS_GETPID)
	if errors.Is(err, unix.EPERM) && os.Geteuid() != 0 {
		t.Skipf("SKIPPED: loading eBPF programs needs root: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestCountsWatchedProcess(t *testing.T) {
	c := attach(t)
	pid := os.Getpid()
	for _, n := range []uint64{0, 1, 1000} {
		if err := c.Watch(pid); err != nil {
			t.Fatal(err)
		}
		for range n {
			unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
		}
		// Other system calls are not counted.
		for range 10 {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
		got, err := c.Count(pid)
		if err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Errorf("counted %d getpid calls, made %d", got, n)
		}
	}
}

func TestUnwatchedProcess(t *testing.T) {
	c := attach(t)
	if n, err := c.Count(os.Getpid()); err == nil {
		t.Errorf("counted %d calls of a process never watched", n)
	}
}
