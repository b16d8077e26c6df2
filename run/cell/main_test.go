package cell_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/syscell/syscell/internal/unprivtest"

	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// TestMain lets the test binary play enforce's shim, for the
// whole-process filter the benchmark compares with, and a launcher.
func TestMain(m *testing.M) {
	enforce.MaybeRunShim()
	if os.Getenv(launcherEnv) != "" {
		os.Exit(launch(os.Args[1:]))
	}
	code := m.Run()
	if dir, _ := builds(); dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// The fixtures: prog and its libraries (testdata/prog.c says what prog
// does), and the audit library.
const (
	progName   = "prog"
	libplug    = "libplug.so"
	auditLib   = cell.LibraryName
	policyName = "prog.toml"
	// wrappersName calls every wrapper that has a stub, through libwrap.so.
	wrappersName = "wrappers"
)

// cflags are what Debian's default build amounts to, made explicit.
var cflags = []string{"-O2", "-fomit-frame-pointer", "-Wall", "-Wextra", "-Werror"}

// builds compiles the audit library and the fixtures once per test
// binary, into a directory every user may read.
var builds = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("gcc"); err != nil {
		return "", fmt.Errorf("%w (scripts/install-deps.sh installs it)", err)
	}
	dir, err := unprivtest.PublicDir("cell-fixtures-")
	if err != nil {
		return dir, err
	}
	if diag, err := cell.BuildLibrary("../../audit", filepath.Join(dir, auditLib), "gcc"); err != nil || diag != "" {
		return dir, fmt.Errorf("build the audit library: %v\n%s", err, diag)
	}
	for _, lib := range []string{"libgetpid", "libmk", "libplug", "libwrap", "libserve"} {
		if err := gcc("-shared", "-fPIC", "-o", filepath.Join(dir, lib+".so"), "testdata/"+lib+".c"); err != nil {
			return dir, err
		}
	}
	policy, err := os.ReadFile(filepath.Join("testdata", policyName))
	if err != nil {
		return dir, err
	}
	// Where a launcher running as another user can read it.
	if err := os.WriteFile(filepath.Join(dir, policyName), policy, 0o644); err != nil {
		return dir, err
	}
	if err := gcc("-o", filepath.Join(dir, wrappersName), "testdata/wrappers.c", "-L"+dir, "-lwrap", "-Wl,-rpath,"+dir); err != nil {
		return dir, err
	}
	// Position-dependent executables, whose code lies at the same
	// address: prog in a directory of its own, to keep its name.
	if err := os.Mkdir(filepath.Join(dir, "nopie"), 0o755); err != nil {
		return dir, err
	}
	if err := gcc("-no-pie", "-o", filepath.Join(dir, "nopie", progName), "testdata/prog.c",
		"-L"+dir, "-lgetpid", "-lmk", "-lpthread", "-ldl", "-Wl,-rpath,"+dir); err != nil {
		return dir, err
	}
	if err := gcc("-no-pie", "-o", filepath.Join(dir, "nopie", "other"), "testdata/other.c"); err != nil {
		return dir, err
	}
	if err := gcc("-o", filepath.Join(dir, "server"), "testdata/server.c", "-L"+dir, "-lserve", "-Wl,-rpath,"+dir); err != nil {
		return dir, err
	}
	return dir, gcc("-o", filepath.Join(dir, progName), "testdata/prog.c",
		"-L"+dir, "-lgetpid", "-lmk", "-lpthread", "-ldl", "-Wl,-rpath,"+dir)
})

// launcherEnv has the test binary run, as a launcher, the command its
// arguments name (launch): as another user, or to be killed.
const launcherEnv = "CELL_TEST_LAUNCHER"

// launch runs argv with the fixtures' policy and audit library, in the
// directory $CELL_TEST_LAUNCHER, on the launcher's own streams; it
// reports the supervised calls on standard error and exits as the
// program did.
func launch(argv []string) int {
	dir := os.Getenv(launcherEnv)
	p, _, err := policy.Load(filepath.Join(dir, policyName), policy.OCIOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cmd := enforce.Command{Path: argv[0], Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	res, err := cell.Run(context.Background(), p, cmd, cell.Options{Library: filepath.Join(dir, auditLib)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, c := range res.Supervised {
		fmt.Fprintf(os.Stderr, "supervised %s %s %t %s\n", c.Owner, c.Syscall, c.Allowed, c.Why)
	}
	return res.ExitCode
}

func gcc(args ...string) error {
	args = append(append([]string{}, cflags...), args...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// fixtures returns the directory of the built fixtures, or skips where
// the kernel or the compiler cannot run the tests.
func fixtures(t testing.TB) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("SKIPPED: the fixtures are x86_64 programs, this is %s", runtime.GOARCH)
	}
	flags := filter.FlagNewListener | filter.FlagTSync | filter.FlagTSyncESRCH
	if err := filter.FlagsSupported(flags); errors.Is(err, filter.ErrNotSupported) {
		t.Skipf("SKIPPED: this kernel lacks a seccomp feature compartments need: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	dir, err := builds()
	var notFound *exec.Error
	if errors.As(err, &notFound) {
		t.Skipf("SKIPPED: cannot compile the C fixtures: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
