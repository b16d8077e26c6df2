package cell_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/internal/unprivtest"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// scratchForAll is a scratch directory every user may write, holding an
// empty "file".
func scratchForAll(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cell-scratch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// launcher is the test binary as a launcher of prog's args.
func launcher(t *testing.T, exe string, args ...string) *exec.Cmd {
	dir := fixtures(t)
	cmd := exec.Command(exe, append([]string{filepath.Join(dir, progName)}, args...)...)
	cmd.Env = append(os.Environ(), launcherEnv+"="+dir)
	return cmd
}

// TestUnprivileged runs the launcher and the program as nobody: the
// filter's install, the supervisor's /proc reads, process_vm_readv and
// ptrace need no privilege over one's own processes.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: switching to nobody needs root; run unprivileged, every other test of this package is this test")
	}
	exe := unprivtest.CopyTestBinary(t, "cell.test")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"lib"}, []string{"lib-mkdir -1 EPERM"}},
		{[]string{"stdio"}, []string{"lib-fopen -1 EPERM", "lib-fopen-tail -1 EPERM", "main-fopen 0 -"}},
		{[]string{"stdio-pointer"}, []string{"lib-fopen -1 EPERM", "main-fopen 0 -", "supervised libmk.so openat false"}},
		{[]string{"dlopen", "", filepath.Join(fixtures(t), libplug)}, []string{"plug-getpid ", "plug-mkdir -1 EPERM",
			"supervised libplug.so getpid true", "supervised prog openat true"}},
	} {
		scratch := scratchForAll(t)
		args := append([]string{tc.args[0], scratch}, tc.args[min(2, len(tc.args)):]...)
		cmd := launcher(t, exe, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s as nobody: %v\n%s", tc.args[0], err, out)
		}
		for _, want := range tc.want {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("%s as nobody: %q missing from\n%s", tc.args[0], want, out)
			}
		}
	}
}

// TestSupervisorDeath kills the launcher while the program runs: the
// program's supervised calls, and the calls the policy stops (which the
// supervisor reports), then fail with ENOSYS, never run, and the calls
// the kernel allows keep running.
func TestSupervisorDeath(t *testing.T) {
	scratch := scratchForAll(t)
	out := filepath.Join(scratch, "out")
	stdout, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := launcher(t, os.Args[0], "wait", scratch)
	// Not StdinPipe, which Wait closes.
	r, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd.Stdin, cmd.Stdout = r, stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	waitFor(t, out, "ready\n")
	cmd.Process.Kill()
	cmd.Wait()
	stdin.Write([]byte{1})
	stdin.Close()
	got := waitFor(t, out, "after-mkdir")
	for _, want := range []string{"lib-fopen -1 ENOSYS", "after-getpid ", "after-mkdir -1 ENOSYS"} {
		if !strings.Contains(got, want) {
			t.Errorf("after the launcher died: %q missing from\n%s", want, got)
		}
	}
}

// waitFor waits until the file holds want, and returns its content.
func waitFor(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), want) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q; it holds\n%s", path, want, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestExecCollision has a position-dependent prog execute a
// position-dependent program, whose code lies where the filter, compiled
// for prog, places prog's compartment: the new image's audit library
// refuses to run it. other makes no call of its own and has no
// compartment: the policy grants it to prog by its path.
func TestExecCollision(t *testing.T) {
	dir := fixtures(t)
	prog, other := filepath.Join(dir, "nopie", progName), filepath.Join(dir, "nopie", "other")
	var stdout, stderr bytes.Buffer
	cmd := enforce.Command{Path: prog, Args: []string{prog, "exec", t.TempDir(), other}, Stdout: &stdout, Stderr: &stderr}
	p := loadPolicy(t, policyName)
	p.Compartments[0].Exec = append(p.Compartments[0].Exec, other)
	res, err := cell.Run(context.Background(), p, cmd, cell.Options{Library: filepath.Join(dir, auditLib)})
	if err != nil {
		t.Fatal(err)
	}
	want := "lies where the filter, compiled before an exec, has compartment 0's code"
	if res.ExitCode != 126 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 126 and %q; denied %+v", res.ExitCode, stdout.String(), stderr.String(), want, res.Denied)
	}
}
