package kcount_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/run/cell/kcount"
)

// childEnv has the test binary make getppid calls: "N" that many, "N:M"
// that many, then start itself to make M more.
const childEnv = "KCOUNT_TEST_CALLS"

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(child(v))
	}
	os.Exit(m.Run())
}

func child(v string) int {
	mine, more, nested := v, "", false
	for i := range v {
		if v[i] == ':' {
			mine, more, nested = v[:i], v[i+1:], true
		}
	}
	n, _ := strconv.Atoi(mine)
	for range n {
		unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
	}
	if nested {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+more)
		if cmd.Run() != nil {
			return 1
		}
	}
	return 0
}

// TestCounts counts the getppid calls of a child and of the child it
// starts, by the range of their code: all of user space as one owner, or
// no range, which counts for the unknown owner.
func TestCounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: loading eBPF programs needs root, and this is uid", os.Geteuid())
	}
	for _, tt := range []struct {
		name   string
		ranges []kcount.Range
		owner  uint32
	}{
		{"ranged", []kcount.Range{{Start: 0, End: 1 << 47, Owner: 7}}, 7},
		{"unknown", nil, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			// The child waits for the counter before it calls.
			cmd := exec.Command("/bin/sh", "-c", "read x; exec \"$0\"", os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"=1000:500")
			cmd.Stdin = r
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			c, err := kcount.Start(cmd.Process.Pid, tt.ranges, 3)
			if err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				if errors.Is(err, unix.EPERM) {
					t.Skipf("SKIPPED: the kernel refuses the program: %v", err)
				}
				t.Fatal(err)
			}
			defer c.Close()
			w.Write([]byte("go\n"))
			w.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			counts, err := c.Counts()
			if err != nil {
				t.Fatal(err)
			}
			if got := counts[kcount.Key{Owner: tt.owner, Nr: unix.SYS_GETPPID}]; got < 1500 {
				t.Errorf("getppid by owner %d: %d calls, want at least 1,500 (1,000 and 500 of a child): %v", tt.owner, got, counts)
			}
		})
	}
}
