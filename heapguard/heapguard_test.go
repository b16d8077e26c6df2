package heapguard

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// built holds the library and the C test program, built once for all tests.
type built struct{ lib, cases string }

func build(t *testing.T) built {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("SKIPPING the heap guard's tests: gcc is not installed (CI installs it; run make deps)")
	}
	touchSources(t)
	dir := t.TempDir()
	b := built{lib: filepath.Join(dir, LibraryName), cases: filepath.Join(dir, "cases")}
	diag, err := Build(".", b.lib, cc)
	if err != nil {
		t.Fatalf("building the library: %v\n%s", err, diag)
	}
	if diag != "" {
		t.Fatalf("the library must build without warnings:\n%s", diag)
	}
	out, err := exec.Command(cc, "-O1", "-g", "-Wall", "-Wextra", "-fno-omit-frame-pointer",
		"-rdynamic", "-pthread", "-o", b.cases, "testdata/cases.c").CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("building testdata/cases.c: %v\n%s", err, out)
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
	for _, f := range append(files, "build.sh", "testdata/cases.c") {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs one case, with the guard preloaded when lib is not empty, and
// returns the signal that killed it (0 if it exited), its exit status and
// its standard error.
func run(t *testing.T, cases, lib, name string) (syscall.Signal, int, string) {
	t.Helper()
	cmd := exec.Command(cases, name)
	cmd.Env = os.Environ()
	if lib != "" {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+lib)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", name, err)
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

func TestCases(t *testing.T) {
	b := build(t)
	uaf := func(access string) []string {
		return []string{"heapguard: use-after-free: " + access, "allocated at:", "in alloc_site", "freed at:", "in free_site"}
	}
	tests := []struct {
		name   string
		signal syscall.Signal // 0: exits with status 0 (the case checks a child)
		report []string       // in this order
		count  int            // reports expected (processes that fault)
	}{
		{"uaf_read", syscall.SIGSEGV, uaf("read of"), 1},
		{"uaf_write", syscall.SIGSEGV, uaf("write to"), 1},
		{"uaf_interior", syscall.SIGSEGV, []string{"use-after-free: read of", "150 bytes into a 200-byte object", "allocated at:", "in alloc_site", "freed at:", "in free_site"}, 1},
		{"uaf_large", syscall.SIGSEGV, uaf("read of"), 1},
		{"uaf_thread", syscall.SIGSEGV, uaf("read of"), 1},
		{"uaf_freed_by_other_thread", syscall.SIGSEGV, append(uaf("read of"), "in free_in_thread"), 1},
		{"uaf_realloc", syscall.SIGSEGV, []string{"use-after-free: read of", "16-byte object", "allocated at:", "in alloc_site", "freed at:", "in uaf_realloc"}, 1},
		{"uaf_memalign", syscall.SIGSEGV, []string{"use-after-free: read of", "40-byte object", "allocated at:", "in uaf_memalign", "freed at:", "in free_site"}, 1},
		{"uaf_fork", syscall.SIGSEGV, uaf("read of"), 2},
		{"uaf_before_constructors", syscall.SIGSEGV, append(uaf("read of"), "in before_constructors"), 1},
		{"double_free", syscall.SIGABRT, []string{"heapguard: double free of", "this free:", "in double_free", "allocated at:", "in alloc_site", "first freed at:", "in free_site"}, 1},
		{"invalid_free_interior", syscall.SIGABRT, []string{"heapguard: invalid free (pointer inside an object)", "this free:", "in invalid_free_interior", "allocated at:", "in alloc_site"}, 1},
		{"invalid_free_stack", syscall.SIGABRT, []string{"heapguard: invalid free (not a heap pointer)", "this free:", "in invalid_free_stack"}, 1},
		{"stress", syscall.SIGSEGV, uaf("read of"), 1},
		{"uaf_released", syscall.SIGSEGV, []string{"heapguard: use-after-free: read of", "in memory released long after the object was freed"}, 1},
		{"uaf_large_released", syscall.SIGSEGV, []string{"heapguard: use-after-free: read of", "in memory released long after the object was freed"}, 1},
		{"uaf_fork_released", 0, []string{"heapguard: use-after-free: read of", "in memory released long after the object was freed"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sig, status, stderr := run(t, b.cases, b.lib, tc.name)
			if sig != tc.signal || (sig == 0 && status != 0) {
				t.Errorf("ended by signal %v (exit status %d), want %v; stderr:\n%s", sig, status, tc.signal, stderr)
			}
			if !inOrder(stderr, tc.report...) {
				t.Errorf("report lacks, in order, %q:\n%s", tc.report, stderr)
			}
			if n := strings.Count(stderr, "== heapguard: "); n != tc.count {
				t.Errorf("%d reports, want %d:\n%s", n, tc.count, stderr)
			}
		})
	}
}

// TestClean: a correct program (calloc, realloc, big and aligned objects,
// fork and exec through system) runs to its end without a report.
func TestClean(t *testing.T) {
	b := build(t)
	sig, status, stderr := run(t, b.cases, b.lib, "clean")
	if sig != 0 || status != 0 || stderr != "" {
		t.Errorf("signal %v, exit status %d, stderr %q; want a clean exit", sig, status, stderr)
	}
}

// TestWithoutGuard shows that the cases test the guard: under glibc's
// malloc the same uses of freed memory go unnoticed.
func TestWithoutGuard(t *testing.T) {
	b := build(t)
	for _, name := range []string{"uaf_read", "uaf_write", "uaf_interior"} {
		if sig, status, stderr := run(t, b.cases, "", name); sig != 0 || status != 0 {
			t.Errorf("%s without the guard: signal %v, exit status %d, stderr %q; want an unnoticed use", name, sig, status, stderr)
		}
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
