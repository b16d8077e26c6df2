//go:build linux

package record_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/fixtures"
	"github.com/syscell/syscell/record"
	"github.com/syscell/syscell/trace"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.Remove()
	os.Exit(code)
}

// fixtureDir builds the C fixtures, or skips, saying why, where they
// cannot be run under the recorder.
func fixtureDir(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: loading the recorder's eBPF program needs root")
	}
	return fixtures.Require(t)
}

// recordMode records one mode of prog.
func recordMode(t *testing.T, dir, mode string) *record.Recording {
	t.Helper()
	args := fixtures.Args(dir, mode)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = testWriter{t}
	rec, state, err := record.Run(context.Background(), cmd, record.Options{})
	if errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("SKIPPED: the recorder's eBPF program cannot be loaded: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !state.Success() {
		t.Fatalf("prog %s: %v", mode, state)
	}
	return rec
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// owners maps fixture file names, [runtime] and [anon-exec] to the calls
// attributed to them.
func owners(rec *record.Recording) map[string][]string {
	got := map[string][]string{}
	for _, c := range rec.Compartments {
		name := c.Name
		if c.Path != "" {
			name = filepath.Base(c.Path)
		}
		for call := range c.Calls {
			got[name] = append(got[name], call)
		}
	}
	return got
}

// TestModes records every mode of prog and checks which compartment got
// which call against fixtures/testdata/attribution.txt, exactly.
func TestModes(t *testing.T) {
	dir := fixtureDir(t)
	want, err := fixtures.Expectations()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"getpid", "printf", "inline", "syscall", "main", "threads", "fork", "exec", "dlopen", "jit"} {
		t.Run(mode, func(t *testing.T) {
			rec := recordMode(t, dir, mode)
			if rec.Lossy() {
				t.Errorf("lossy recording:\n%s", rec.Summary())
			}
			for _, p := range want[mode].Compare(owners(rec)) {
				t.Error(p)
			}
		})
	}
}

// TestComplete compares the number of calls recorded with strace's count
// for the same deterministic modes: the recorder misses no call, from the
// first instruction to the last process's exit. (strace also counts the
// execve that starts the program, which the recorder starts after.)
func TestComplete(t *testing.T) {
	dir := fixtureDir(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skipf("SKIPPED: strace is the oracle and is missing: %v", err)
	}
	for _, mode := range []string{"getpid", "printf", "fork", "exec", "dlopen", "jit"} {
		t.Run(mode, func(t *testing.T) {
			rec := recordMode(t, dir, mode)
			want := straceCount(t, fixtures.Args(dir, mode)) - 1
			if got := rec.Calls(); got != want {
				t.Errorf("recorded %d calls, strace counts %d", got, want)
			}
		})
	}
}

// straceCount runs args under strace -f and counts the calls it saw.
func straceCount(t *testing.T, args []string) uint64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace")
	cmd := exec.Command("strace", append([]string{"-f", "-qq", "-o", out}, args...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, line := range strings.Split(string(data), "\n") {
		// Resumed lines continue a call already counted; signals and
		// exits are no calls.
		if line == "" || strings.Contains(line, "resumed>") || strings.Contains(line, " --- ") || strings.Contains(line, " +++ ") {
			continue
		}
		n++
	}
	return n
}

// TestStackDepth records libc's deepest common paths (printf to an
// unbuffered stream, getaddrinfo) and checks that the default stack copy
// holds what their unwinds read, with room to spare; the depths are
// logged, as they justify trace.DefaultStackBytes.
func TestStackDepth(t *testing.T) {
	dir := fixtureDir(t)
	for _, mode := range []string{"printf", "resolve"} {
		rec := recordMode(t, dir, mode)
		if rec.Lossy() {
			t.Errorf("%s: lossy recording:\n%s", mode, rec.Summary())
		}
		t.Logf("%s: the deepest unwind read %d bytes (%s)", mode, rec.Stats.StackNeeded, rec.Stats.StackNeededBy)
		if rec.Stats.StackNeeded > trace.DefaultStackBytes/2 {
			t.Errorf("%s: an unwind read %d bytes, more than half the default copy of %d", mode, rec.Stats.StackNeeded, trace.DefaultStackBytes)
		}
	}
}
