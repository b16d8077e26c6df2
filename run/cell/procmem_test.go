package cell

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestResolvesToProcMem resolves paths as the test process would: its
// mem file by any name, through a directory descriptor, and files that
// are not; a magic link is an error.
func TestResolvesToProcMem(t *testing.T) {
	self := os.Getpid()
	dir, err := unix.Open("/proc/self", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	f, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		dir  int
		path string
		want bool
		err  bool
	}{
		{unix.AT_FDCWD, "/proc/self/mem", true, false},
		{unix.AT_FDCWD, fmt.Sprintf("/proc/%d/task/%d/mem", self, self), true, false},
		{unix.AT_FDCWD, "/proc/thread-self/../../mem", true, false},
		{dir, "mem", true, false},
		{dir, "maps", false, false},
		{unix.AT_FDCWD, "/etc/hostname", false, false},
		{unix.AT_FDCWD, "no-such-file", false, false},
		{unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), false, true},
	} {
		got, err := resolvesToProcMem(self, tc.dir, tc.path)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%d %q: %t, %v; want %t, error %t", tc.dir, tc.path, got, err, tc.want, tc.err)
		}
	}
}
