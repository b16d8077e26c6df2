package cell

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEnvBlock checks the environment setExecEnv writes: an array of
// pointers at the returned address, 16-byte aligned and below the top,
// each to its string, NUL-terminated, then a null pointer.
func TestEnvBlock(t *testing.T) {
	for _, env := range [][]string{nil, {"A=1"}, {"LD_AUDIT=/x/libsyscell-audit.so", "SYSCELL_CELL=window 1;end;", "PATH=/usr/bin:/bin"}} {
		const top = 0x7ffd_0000_1000 - 3
		block, base := envBlock(top, env)
		if base%16 != 0 || base+uint64(len(block)) > top {
			t.Fatalf("%q: block of %d bytes at %#x, top %#x", env, len(block), base, top)
		}
		for i := 0; ; i++ {
			p := binary.LittleEndian.Uint64(block[8*i:])
			if i == len(env) {
				if p != 0 {
					t.Errorf("%q: pointer %d is %#x, want the null pointer", env, i, p)
				}
				break
			}
			off := int(p - base)
			end := off + len(env[i])
			if off < 8*(len(env)+1) || end >= len(block) || string(block[off:end]) != env[i] || block[end] != 0 {
				t.Errorf("%q: pointer %d leads to %q", env, i, block[off:min(end, len(block))])
			}
		}
	}
}

// TestExecutedProgram follows #! chains to the program an exec loads.
func TestExecutedProgram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	script := write("script", "#!/bin/sh -e\necho\n")
	nested := write("nested", "#!"+script+"\n")
	loop := write("loop", "")
	write("loop", "#!"+loop+"\n")
	for _, tc := range []struct {
		path, want string
		err        bool
	}{
		{"/bin/true", "/bin/true", false},
		{script, "/bin/sh", false},
		{nested, "/bin/sh", false},
		{loop, "", true},
		{filepath.Join(dir, "missing"), "", true},
	} {
		got, err := checkExecuted("", tc.path)
		if got != tc.want && !tc.err || (err != nil) != tc.err {
			t.Errorf("checkExecuted(%s) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.err)
		}
	}
}

func TestParseExecRule(t *testing.T) {
	for in, want := range map[string]ExecRule{"bound": ExecBound, "deny": ExecDeny} {
		if got, err := ParseExecRule(in); got != want || err != nil {
			t.Errorf("ParseExecRule(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseExecRule("allow"); err == nil {
		t.Error("ParseExecRule(allow) succeeded")
	}
}

// TestNearestKnownStopsAtSupervisor checks that the walk up a process's
// ancestors ends at the supervisor: a process it started itself inherits
// nothing, even from a known process above it, and the walk reads no
// status above it. The test process plays the supervisor and its parent
// a known process.
func TestNearestKnownStopsAtSupervisor(t *testing.T) {
	parent, err := unix.PidfdOpen(os.Getppid(), 0)
	if err != nil {
		t.Skipf("pidfd of the test's parent: %v", err)
	}
	defer unix.Close(parent)
	child := exec.Command("sleep", "10")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		child.Process.Kill()
		child.Wait()
	}()
	s := &supervisor{procs: map[int]*process{os.Getppid(): {tgid: os.Getppid(), pidfd: parent, bound: "outer"}}}
	if p, _ := s.nearestKnown(child.Process.Pid); p != nil {
		t.Errorf("nearestKnown(the supervisor's child) = process %d, want none", p.tgid)
	}
	if got := s.inheritedBound(child.Process.Pid); got != "" {
		t.Errorf("inheritedBound(the supervisor's child) = %q, want none", got)
	}
}
