package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/syscell/syscell/heapguard"
	"github.com/syscell/syscell/run/cell"
)

// TestMain makes the test binary play syscell when testscript runs it under
// that name, and the OCI runtime under syscell-runtime.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"syscell": main, "syscell-runtime": main})
}

// fixtures are files of other packages' testdata that scripts use, copied
// into each script's work directory under their base names.
var fixtures = []string{
	"../../policy/testdata/docker-default.json",
	"../../policy/testdata/docker-default.toml",
}

// TestScripts runs the command-line tests in testdata: good_* scripts for
// what must work, fail_* scripts for bad input, each with its exit status and
// its error.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Setup:               copyFixtures,
		Condition:           condition,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"status":          cmdStatus,
			"build-heapguard": cmdBuildHeapGuard,
			"build-audit":     cmdBuildAudit,
		},
	})
}

// condition adds [root] to testscript's conditions, for scripts that load
// eBPF programs, and [procmem], where the kernel lets a process write its
// own sealed code through /proc/PID/mem.
func condition(cond string) (bool, error) {
	switch cond {
	case "root":
		return os.Geteuid() == 0, nil
	case "procmem":
		writes, _ := cell.ProcMemWrites()
		return writes, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

func copyFixtures(env *testscript.Env) error {
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(env.WorkDir, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// cmdStatus is "status N PROGRAM ARGS...": run the program, which must exit
// with status N. Its output is then checked like exec's.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	var exitErr *exec.ExitError
	if err := ts.Exec(args[1], args[2:]...); errors.As(err, &exitErr) {
		got = exitErr.ExitCode()
	} else {
		ts.Check(err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdBuildHeapGuard is "build-heapguard": build the guard library where
// syscell run --heap-guard looks for it, next to the script's syscell.
func cmdBuildHeapGuard(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 0 {
		ts.Fatalf("usage: build-heapguard")
	}
	exe := scriptSyscell(ts)
	src, err := filepath.Abs("../../heapguard")
	ts.Check(err)
	diag, err := heapguard.Build(src, heapguard.LibraryPath(exe), "cc")
	if err != nil {
		ts.Fatalf("build the heap guard: %v\n%s", err, diag)
	}
}

// cmdBuildAudit is "build-audit": build the audit library of compartments
// where syscell run looks for it, next to the script's syscell. Scripts
// run in parallel and share that binary: the library is built once.
func cmdBuildAudit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 0 {
		ts.Fatalf("usage: build-audit")
	}
	exe := scriptSyscell(ts)
	auditOnce.Do(func() {
		src, err := filepath.Abs("../../audit")
		if err == nil {
			auditDiag, err = cell.BuildLibrary(src, cell.LibraryPath(exe), "cc")
		}
		auditErr = err
	})
	if auditErr != nil || auditDiag != "" {
		ts.Fatalf("build the audit library: %v\n%s", auditErr, auditDiag)
	}
}

var (
	auditOnce sync.Once
	auditDiag string
	auditErr  error
)

// scriptSyscell is the syscell binary on the script's PATH.
func scriptSyscell(ts *testscript.TestScript) string {
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		exe := filepath.Join(dir, "syscell")
		if _, err := os.Stat(exe); err == nil {
			return exe
		}
	}
	ts.Fatalf("no syscell on the script's PATH")
	return ""
}

// TestRawNotToTerminal checks that compile refuses to write a binary program
// to a terminal, which a script cannot give it.
func TestRawNotToTerminal(t *testing.T) {
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("SKIPPED: no pseudo-terminal to write to: %v", err)
	}
	defer tty.Close()
	if !isTerminal(tty) {
		t.Fatalf("isTerminal(%s) = false", tty.Name())
	}
	policy := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(policy, []byte("version = 1\ndefault = \"allow\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := rootCommand()
	root.SetOut(tty)
	root.SetArgs([]string{"compile", policy})
	err = root.Execute()
	if err == nil {
		t.Fatal("compile wrote a binary program to a terminal")
	}
	if code := exitCode(err); code != 2 {
		t.Fatalf("compile to a terminal: exit status %d (%v), want 2", code, err)
	}
}
