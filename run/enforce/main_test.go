package enforce_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/syscell/syscell/internal/unprivtest"

	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/policies"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// TestMain lets the test binary play the shim, and the filtered children
// of package filter; and builds the shim's own binary next to it, which
// Run prefers, as it finds it next to syscell.
func TestMain(m *testing.M) {
	enforce.MaybeRunShim()
	filter.MaybeRunChild()
	exe, err := os.Executable()
	if err == nil {
		var diag string
		diag, err = enforce.BuildShim("shim", filepath.Join(filepath.Dir(exe), enforce.ShimName), "gcc")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, diag)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the shim (scripts/install-deps.sh installs gcc): %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if dir, _ := builds(); dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// requireKernel skips, saying why, where the kernel cannot run the tests.
func requireKernel(t testing.TB) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("SKIPPED: the fixtures are x86_64 programs, this is %s", runtime.GOARCH)
	}
	for _, err := range []error{filter.Supported(), filter.FlagsSupported(filter.FlagNewListener)} {
		if errors.Is(err, filter.ErrNotSupported) {
			t.Skipf("SKIPPED: this kernel lacks a seccomp feature run needs: %v", err)
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// builds compiles the fixture once per test binary into a directory that
// every user may read, for the unprivileged tests: dynamically linked as
// "calls", statically as "calls-static".
var builds = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("gcc"); err != nil {
		return "", fmt.Errorf("%w (scripts/install-deps.sh installs it)", err)
	}
	dir, err := unprivtest.PublicDir("enforce-fixtures-")
	if err != nil {
		return dir, err
	}
	for name, flags := range map[string][]string{"calls": nil, "calls-static": {"-static"}} {
		args := append([]string{"-O2", "-Wall", "-Werror", "-o", filepath.Join(dir, name), "testdata/calls.c", "-lpthread"}, flags...)
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			return dir, fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir, nil
})

// fixture returns the path of a compiled fixture.
func fixture(t testing.TB, name string) string {
	t.Helper()
	requireKernel(t)
	dir, err := builds()
	var notFound *exec.Error
	if errors.As(err, &notFound) {
		t.Skipf("SKIPPED: cannot compile the C fixtures: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// load resolves a test policy, or a bundled one, for its ABIs, with every
// stopping action replaced by override unless it is empty.
func load(t testing.TB, name, override string) *policy.Resolved {
	t.Helper()
	var p *policy.Policy
	var err error
	if policies.Known(name) {
		p, _, err = policies.Load(name, policy.OCIOptions{Kernel: "6.18"})
	} else {
		p, _, err = policy.Load(filepath.Join("testdata", name), policy.OCIOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	r := p.Resolve(p.Arches)
	if override == "" {
		return r
	}
	act, err := policy.ParseAction(override)
	if err != nil {
		t.Fatal(err)
	}
	return enforce.Override(r, act)
}

// launch runs argv under r and returns the result and the standard
// output; the command's standard error goes to the test log.
func launch(t testing.TB, r *policy.Resolved, opt enforce.Options, argv ...string) (*enforce.Result, string) {
	t.Helper()
	var stdout bytes.Buffer
	cmd := enforce.Command{Path: argv[0], Args: argv, Stdout: &stdout, Stderr: testWriter{t}}
	res, err := enforce.Run(context.Background(), r, cmd, opt)
	if err != nil {
		t.Fatalf("run %q: %v", argv, err)
	}
	return res, stdout.String()
}

// testWriter logs what is written to it.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("stderr: %s", b)
	return len(b), nil
}

// ipOf reads the address the fixture's "ip" operation prints first.
func ipOf(t *testing.T, stdout string) uint64 {
	t.Helper()
	var ip uint64
	if _, err := fmt.Sscanf(stdout, "ip: %v\n", &ip); err != nil {
		t.Fatalf("no ip in the fixture's output %q: %v", stdout, err)
	}
	return ip
}

// exists reports whether path exists.
func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// x86_64 names a call the way a report does.
func x86_64(name string) (string, string, uint32) {
	nr, _ := syscalls.Lookup(syscalls.X86_64, name)
	return "x86_64", name, nr
}

// nobody runs the shim and the command as the unprivileged user nobody,
// from a copy of the test binary that nobody may execute.
func nobody(t *testing.T) *syscall.SysProcAttr {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: switching to nobody needs root; run unprivileged, every other test of this package is this test")
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}
