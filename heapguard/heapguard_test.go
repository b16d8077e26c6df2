package heapguard

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// built holds the library and the C test programs.
type built struct{ lib, cases, bound, lock string }

func build(t *testing.T) built {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("SKIPPING the heap guard's tests: gcc is not installed (CI installs it; run make deps)")
	}
	touchSources(t)
	dir := t.TempDir()
	b := built{lib: filepath.Join(dir, LibraryName), cases: filepath.Join(dir, "cases"), bound: filepath.Join(dir, "bound"),
		lock: filepath.Join(dir, "lock")}
	diag, err := Build(".", b.lib, cc)
	if err != nil {
		t.Fatalf("building the library: %v\n%s", err, diag)
	}
	if diag != "" {
		t.Fatalf("the library must build without warnings:\n%s", diag)
	}
	for prog, srcs := range map[string][]string{b.cases: {"testdata/cases.c"}, b.bound: {"testdata/bound.c"},
		b.lock: {"testdata/lock.c", "src/lock.c"}} {
		args := append([]string{"-O1", "-g", "-Wall", "-Wextra", "-fno-omit-frame-pointer",
			"-rdynamic", "-pthread", "-o", prog}, srcs...)
		out, err := exec.Command(cc, args...).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Fatalf("building %s: %v\n%s", srcs[0], err, out)
		}
	}
	return b
}

// touchSources reads every file the build uses. The compiler reads them in
// another process, which go test's cache does not see: reading them here
// makes a change to any of them rerun the tests.
func touchSources(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob("src/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, "build.sh", "testdata/cases.c", "testdata/bound.c", "testdata/lock.c") {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
}

// Modes of the guard, as SYSCELL_HEAPGUARD names them; "" runs without it.
const (
	none     = ""
	strict   = "strict"
	deferred = "deferred"
)

// run runs prog with args, with the guard preloaded in mode (none: not at
// all), and returns the signal that killed it (0 if it exited), its exit
// status and its standard error.
func run(t *testing.T, b built, mode, prog string, args ...string) (syscall.Signal, int, string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = os.Environ()
	if mode != none {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+b.lib, "SYSCELL_HEAPGUARD="+mode)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s %v: %v", prog, args, err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return ws.Signal(), 0, stderr.String()
	}
	return 0, ws.ExitStatus(), stderr.String()
}

// inOrder reports whether each of want appears in s after the previous one.
func inOrder(s string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

// An outcome of a case: the signal that ends it, the lines its report has
// in this order, and how many processes report.
type outcome struct {
	signal syscall.Signal
	report []string
	count  int
}

// probeNoReuse is the exit status of `cases probe NAME` when the freed
// byte was handed out to no new object and still reads (testdata/cases.c).
const probeNoReuse = 10

func TestCases(t *testing.T) {
	b := build(t)
	uaf := func(access string, more ...string) outcome {
		return outcome{syscall.SIGSEGV, append([]string{"heapguard: use-after-free: " + access, "allocated at:", "in alloc_site", "freed at:", "in free_site"}, more...), 1}
	}
	uafAt := func(access, where string) outcome {
		return outcome{syscall.SIGSEGV, []string{"heapguard: use-after-free: " + access, where, "allocated at:", "in alloc_site", "freed at:", "in free_site"}, 1}
	}
	released := outcome{syscall.SIGSEGV, []string{"heapguard: use-after-free: read of", "in memory released long after the object was freed"}, 1}
	doubleFree := outcome{syscall.SIGABRT, []string{"heapguard: double free of", "this free:", "in double_free", "allocated at:", "in alloc_site", "first freed at:", "in free_site"}, 1}
	interior := outcome{syscall.SIGABRT, []string{"heapguard: invalid free (pointer inside an object)", "this free:", "in invalid_free_interior", "allocated at:", "in alloc_site"}, 1}
	twoCallers := outcome{syscall.SIGSEGV, []string{"heapguard: use-after-free: read of", "150000 bytes into a 200000-byte object",
		"allocated at:", "in alloc_site", "in via_b", "freed at:", "in free_site"}, 1}
	manySites := outcome{syscall.SIGSEGV, []string{"heapguard: use-after-free: read of", "150000 bytes into a 200000-byte object",
		"allocated at:", "in alloc_site", "in inner_14", "in outer_37", "freed at:", "in free_site"}, 1}
	stack := outcome{syscall.SIGABRT, []string{"heapguard: invalid free (not a heap pointer)", "this free:", "in invalid_free_stack"}, 1}
	tests := []struct {
		name   string
		strict outcome
		// In deferred mode, nil: the use reads memory never handed out
		// again (the probe shows it).
		deferred *outcome
	}{
		{"uaf_read", uaf("read of"), nil},
		{"uaf_write", uaf("write to"), nil},
		{"uaf_interior", uafAt("read of", "150 bytes into a 200-byte object"), nil},
		{"uaf_large", uaf("read of"), ptr(uafAt("read of", "70000 bytes into a 100000-byte object"))},
		{"uaf_thread", uaf("read of"), nil},
		{"uaf_freed_by_other_thread", uaf("read of", "in free_in_thread"), nil},
		{"uaf_realloc", outcome{syscall.SIGSEGV, []string{"use-after-free: read of", "16-byte object", "allocated at:", "in alloc_site", "freed at:", "in uaf_realloc"}, 1}, nil},
		{"uaf_memalign", outcome{syscall.SIGSEGV, []string{"use-after-free: read of", "40-byte object", "allocated at:", "in uaf_memalign", "freed at:", "in free_site"}, 1}, nil},
		{"uaf_fork", func() outcome { o := uaf("read of"); o.count = 2; return o }(), nil},
		{"uaf_before_constructors", uaf("read of", "in before_constructors"), nil},
		{"double_free", doubleFree, &doubleFree},
		{"invalid_free_interior", interior, &interior},
		{"invalid_free_stack", stack, &stack},
		{"stress", uaf("read of"), nil},
		{"uaf_released", released, &released},
		{"uaf_large_released", released, ptr(uaf("read of"))},
		{"uaf_fork_released", released, &released},
		{"uaf_batched", uafAt("read of", "100 bytes into a 4000-byte object"), ptr(uafAt("read of", "100 bytes into a 4000-byte object"))},
		{"uaf_large_eager", uafAt("write to", "150000 bytes into a 200000-byte object"), ptr(uafAt("write to", "150000 bytes into a 200000-byte object"))},
		{"uaf_recycled", uafAt("read of", "100 bytes into a 4000-byte object"), ptr(outcome{syscall.SIGSEGV, []string{"a new object holds a freed object's bytes", "heapguard: use-after-free: read of", "100 bytes into a 4000-byte object", "allocated at:", "in alloc_site", "freed at:", "in free_site"}, 1})},
		{"recycle_fork", outcome{}, &outcome{report: []string{"a new object of the child holds a freed object's bytes"}}},
		{"uaf_two_callers", twoCallers, &twoCallers},
		{"uaf_many_sites", manySites, &manySites},
	}
	for _, tc := range tests {
		t.Run(strict+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, b, strict, tc.name, tc.strict)
		})
		t.Run(deferred+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.deferred != nil {
				check(t, b, deferred, tc.name, *tc.deferred)
				return
			}
			sig, status, stderr := run(t, b, deferred, b.cases, "probe", tc.name)
			if sig != 0 || status != probeNoReuse || !strings.Contains(stderr, "probe: no reuse") {
				t.Errorf("probe: signal %v, exit status %d, want status %d (no reuse); stderr:\n%s", sig, status, probeNoReuse, stderr)
			}
		})
	}
}

func ptr(o outcome) *outcome { return &o }

// check runs one case in mode and compares how it ends with want.
func check(t *testing.T, b built, mode, name string, want outcome) {
	t.Helper()
	sig, status, stderr := run(t, b, mode, b.cases, name)
	if sig != want.signal || (sig == 0 && status != 0) {
		t.Errorf("ended by signal %v (exit status %d), want %v; stderr:\n%s", sig, status, want.signal, stderr)
	}
	if !inOrder(stderr, want.report...) {
		t.Errorf("report lacks, in order, %q:\n%s", want.report, stderr)
	}
	if n := strings.Count(stderr, "== heapguard: "); n != want.count {
		t.Errorf("%d reports, want %d:\n%s", n, want.count, stderr)
	}
}

// TestClean: a correct program (calloc, realloc, big and aligned objects,
// fork and exec through system) runs to its end without a report.
func TestClean(t *testing.T) {
	b := build(t)
	for _, mode := range []string{strict, deferred} {
		sig, status, stderr := run(t, b, mode, b.cases, "clean")
		if sig != 0 || status != 0 || stderr != "" {
			t.Errorf("%s: signal %v, exit status %d, stderr %q; want a clean exit", mode, sig, status, stderr)
		}
	}
}

// TestReallocRoom: in strict mode, where realloc's every move is a
// revocation, the objects of a site that realloc grows get the room at
// once (src/api.c); deferred mode gives none, and moves them all.
func TestReallocRoom(t *testing.T) {
	b := build(t)
	for mode, want := range map[string]int{strict: 0, deferred: 1} {
		if sig, status, stderr := run(t, b, mode, b.cases, "realloc_room"); sig != 0 || status != want {
			t.Errorf("%s: signal %v, exit status %d, want %d; stderr:\n%s", mode, sig, status, want, stderr)
		}
	}
}

// TestWithoutGuard shows that the cases test the guard: under glibc's
// malloc the same uses of freed memory go unnoticed.
func TestWithoutGuard(t *testing.T) {
	b := build(t)
	for _, name := range []string{"uaf_read", "uaf_write", "uaf_interior"} {
		if sig, status, stderr := run(t, b, none, b.cases, name); sig != 0 || status != 0 {
			t.Errorf("%s without the guard: signal %v, exit status %d, stderr %q; want an unnoticed use", name, sig, status, stderr)
		}
	}
}

// TestDeferredBound: under threads and fork, a page whose objects are all
// freed faults once the batch's bound in bytes (HD_BATCH_BYTES, read from
// the source) of other memory has died after it, also when process_madvise
// is refused (the guard falls back to a call a range), and in a process of
// one thread, whose dead pages move to new addresses (src/recycle.c);
// glibc's malloc fails the same program, and so does the guard checked
// against half the bound.
func TestDeferredBound(t *testing.T) {
	b := build(t)
	bound := batchBytes(t)
	for _, args := range [][]string{{"4", strconv.Itoa(bound)}, {"4", strconv.Itoa(bound), "deny"}, {"0", strconv.Itoa(bound)}} {
		if sig, status, out := run(t, b, deferred, b.bound, args...); sig != 0 || status != 0 {
			t.Errorf("deferred, bound %v: signal %v, exit status %d; want 0:\n%s", args, sig, status, out)
		}
	}
	for _, c := range []struct {
		mode    string
		bound   int
		threads string
	}{{none, bound, "4"}, {deferred, bound / 2, "4"}, {deferred, bound / 2, "0"}} {
		if sig, status, _ := run(t, b, c.mode, b.bound, c.threads, strconv.Itoa(c.bound)); sig != 0 || status != 1 {
			t.Errorf("mode %q, %s threads, bound %d: signal %v, exit status %d; want 1 (a page still readable)", c.mode, c.threads, c.bound, sig, status)
		}
	}
}

// batchBytes reads HD_BATCH_BYTES, "(N << SHIFT)", from src/internal.h.
func batchBytes(t *testing.T) int {
	t.Helper()
	src, err := os.ReadFile("src/internal.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define HD_BATCH_BYTES \((\d+)UL << (\d+)\)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("src/internal.h: no #define HD_BATCH_BYTES (N << SHIFT)")
	}
	n, _ := strconv.Atoi(string(m[1]))
	shift, _ := strconv.Atoi(string(m[2]))
	return n << shift
}

// TestLock: the guard's locks exclude, a waiter sleeps rather than spins,
// and a forked child resets them (testdata/lock.c, linked with src/lock.c).
func TestLock(t *testing.T) {
	b := build(t)
	if sig, status, out := run(t, b, none, b.lock); sig != 0 || status != 0 {
		t.Errorf("signal %v, exit status %d; want 0:\n%s", sig, status, out)
	}
}

func TestSyscalls(t *testing.T) {
	names := Syscalls()
	for _, must := range []string{"madvise", "memfd_create", "mmap"} {
		found := false
		for _, n := range names {
			found = found || n == must
		}
		if !found {
			t.Errorf("Syscalls() lacks %s: %v", must, names)
		}
	}
}
