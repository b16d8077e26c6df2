//go:build linux

package record_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	return recordCmd(t, exec.Command(args[0], args[1:]...), record.Options{})
}

// recordCmd records cmd, which must succeed.
func recordCmd(t *testing.T, cmd *exec.Cmd, opts record.Options) *record.Recording {
	t.Helper()
	cmd.Stderr = testWriter{t}
	rec, state, err := record.Run(context.Background(), cmd, opts)
	if errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("SKIPPED: the recorder's eBPF program cannot be loaded: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !state.Success() {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), state)
	}
	return rec
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// owners maps fixture file names, [runtime], [anon-exec] and [start-up]
// to the calls attributed to them.
func owners(rec *record.Recording) map[string][]string {
	got := map[string][]string{}
	for call := range rec.StartUp {
		got[record.StartUpName] = append(got[record.StartUpName], call)
	}
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
	for _, mode := range []string{"getpid", "origin", "printf", "tailcall", "inline", "syscall", "main", "threads", "fork", "vfork", "exec", "dlopen", "jit"} {
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

// TestOrigin records prog-origin, whose dynamic loader calls readlink at
// start-up with a 4 KiB buffer on the stack, between the stack pointer and
// the frames, in pages never touched before: the stack copy has a hole
// there, and the frames above it must still be unwound. Environments and
// argument lists of many sizes move the initial stack pointer, and with it
// where in a page the call's stack pointer falls (as does the kernel's
// randomization): every run must be attributed exactly as attribution.txt
// says, and some runs must have met the hole, or the test proves nothing.
func TestOrigin(t *testing.T) {
	dir := fixtureDir(t)
	want, err := fixtures.Expectations()
	if err != nil {
		t.Fatal(err)
	}
	args := fixtures.Args(dir, "origin")
	type variant struct {
		name       string
		env, extra []string
	}
	var variants []variant
	for n := 0; n < 4096; n += 272 {
		variants = append(variants, variant{name: fmt.Sprintf("env+%d", n), env: []string{"PAD=" + strings.Repeat("x", n)}})
	}
	// Strings of up to 128 KiB each (MAX_ARG_STRLEN), 1.5 MiB in all.
	big := strings.Repeat("y", 100<<10)
	var bigEnv, bigArgs []string
	for i := range 15 {
		bigEnv = append(bigEnv, fmt.Sprintf("BIG%d=%s", i, big))
		bigArgs = append(bigArgs, big)
	}
	variants = append(variants,
		variant{name: "env 1.5 MiB", env: bigEnv},
		variant{name: "argv 1.5 MiB", extra: bigArgs},
		variant{name: "argv 100000 strings", extra: slices.Repeat([]string{"a"}, 100000)})
	var holes uint64
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			cmd := exec.Command(args[0], append(slices.Clone(args[1:]), v.extra...)...)
			cmd.Env = append(os.Environ(), v.env...)
			rec := recordCmd(t, cmd, record.Options{})
			holes += rec.Stats.Holes
			if rec.Lossy() {
				t.Errorf("lossy recording:\n%s", rec.Summary())
			}
			for _, p := range want["origin"].Compare(owners(rec)) {
				t.Error(p)
			}
		})
	}
	t.Logf("%d snapshots in %d runs had pages that could not be copied", holes, len(variants))
	if holes == 0 {
		t.Error("no snapshot had a page of the stack that could not be copied")
	}
}

// TestPhases records phases by phase, from the default serving calls:
// each process serves from its own first epoll_wait (that call included)
// or from its birth by a serving process, so early's getuid, made after
// its parent served but before it did, is not a serving call, and late's
// getsid is. getpgid's 2N calls, N in each phase from one path, are
// mostly counted in the kernel, which keeps them apart by phase.
func TestPhases(t *testing.T) {
	dir := fixtureDir(t)
	const n = 100000
	phases := func(t *testing.T, opts record.Options) (*record.Recording, *record.Compartment) {
		cmd := exec.Command(filepath.Join(dir, fixtures.Phases), t.TempDir(), strconv.Itoa(n))
		rec := recordCmd(t, cmd, opts)
		if rec.Lossy() {
			t.Errorf("lossy recording:\n%s", rec.Summary())
		}
		for _, c := range rec.Compartments {
			if filepath.Base(c.Path) == fixtures.Phases {
				return rec, c
			}
		}
		t.Fatalf("no compartment for %s:\n%s", fixtures.Phases, rec.Summary())
		return nil, nil
	}
	// Before serving: the parent's openat, close, mkdir, epoll_create1,
	// pipe2 and fork (clone, and the child's set_robust_list), early's
	// read and getuid. While serving: epoll_wait, getppid (parent and
	// early), write, the second fork, wait4, late's getsid, exit_group.
	// getpgid in both.
	calls := []string{"clone", "close", "epoll_create1", "epoll_wait", "exit_group", "getpgid", "getppid", "getsid", "getuid",
		"mkdir", "openat", "pipe2", "read", "set_robust_list", "wait4", "write"}
	serving := []string{"clone", "epoll_wait", "exit_group", "getpgid", "getppid", "getsid", "set_robust_list", "wait4", "write"}

	t.Run("phases", func(t *testing.T) {
		rec, c := phases(t, record.Options{ServingFrom: record.DefaultServingFrom})
		if got := sortedKeys(c.Calls); !slices.Equal(got, calls) {
			t.Errorf("calls %v, want %v", got, calls)
		}
		if got := sortedKeys(c.Serving); !slices.Equal(got, serving) {
			t.Errorf("serving calls %v, want %v", got, serving)
		}
		if c.Calls["getpgid"] != 2*n || c.Serving["getpgid"] != n {
			t.Errorf("getpgid: %d calls, %d serving; want %d, %d", c.Calls["getpgid"], c.Serving["getpgid"], 2*n, n)
		}
		if rec.Stats.Counted == 0 {
			t.Errorf("no call counted in the kernel:\n%s", rec.Summary())
		}
		if rec.Stats.ServingProcesses != 3 {
			t.Errorf("%d processes served, want 3", rec.Stats.ServingProcesses)
		}
		if want := slices.Sorted(slices.Values(record.DefaultServingFrom)); !slices.Equal(rec.ServingFrom, want) {
			t.Errorf("serving from %v, want %v", rec.ServingFrom, want)
		}
		for _, other := range rec.Compartments {
			if other != c && len(other.Serving) > 0 {
				t.Errorf("%s served: %v", other.Name, other.Serving)
			}
		}
		p, _ := rec.Policy()
		for _, pc := range p.Compartments {
			if pc.Path == c.Path && !slices.Equal(pc.Serving, serving) {
				t.Errorf("policy: %s serving %v, want %v", pc.Name, pc.Serving, serving)
			}
		}
		if !slices.Equal(p.ServingFrom, rec.ServingFrom) {
			t.Errorf("policy serving from %v, want %v", p.ServingFrom, rec.ServingFrom)
		}
	})
	t.Run("no phases", func(t *testing.T) {
		rec, c := phases(t, record.Options{})
		if got := sortedKeys(c.Calls); !slices.Equal(got, calls) {
			t.Errorf("calls %v, want %v", got, calls)
		}
		if rec.Phased() || c.Serving != nil || rec.Stats.Serving != 0 || rec.Stats.ServingProcesses != 0 {
			t.Errorf("phases without ServingFrom: %v %v\n%s", rec.ServingFrom, c.Serving, rec.Summary())
		}
	})
	t.Run("other call", func(t *testing.T) {
		// Serving from getuid: only early serves, from its getuid on.
		rec, c := phases(t, record.Options{ServingFrom: []string{"getuid"}})
		want := []string{"epoll_wait", "exit_group", "getppid", "getuid"}
		if got := sortedKeys(c.Serving); !slices.Equal(got, want) || rec.Stats.ServingProcesses != 1 {
			t.Errorf("serving calls %v of %d processes, want %v of 1", got, rec.Stats.ServingProcesses, want)
		}
	})
}

// TestLaggingThread records lagging's thread, started while starting:
// its getpriority, made before the process served in this run, may come
// after in the next, so the policy's serving calls have it; the main
// thread's getpgid, before its epoll_wait in every run, they have not.
func TestLaggingThread(t *testing.T) {
	dir := fixtureDir(t)
	rec := recordCmd(t, exec.Command(filepath.Join(dir, fixtures.Lagging)), record.Options{ServingFrom: record.DefaultServingFrom})
	for _, c := range rec.Compartments {
		if filepath.Base(c.Path) != fixtures.Lagging {
			continue
		}
		for name, serving := range map[string]bool{"getpriority": true, "epoll_wait": true, "getpgid": false} {
			if _, ok := c.Calls[name]; !ok {
				t.Errorf("%s not recorded: %v", name, sortedKeys(c.Calls))
			}
			if _, ok := c.Serving[name]; ok != serving {
				t.Errorf("%s serving: %t, want %t (serving calls %v)", name, ok, serving, sortedKeys(c.Serving))
			}
		}
		return
	}
	t.Fatalf("no compartment for %s:\n%s", fixtures.Lagging, rec.Summary())
}

func sortedKeys(m map[string]uint64) []string { return slices.Sorted(maps.Keys(m)) }
