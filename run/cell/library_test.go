package cell_test

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibraryNeedsNoLibc checks that the audit library brings its own
// runtime (audit/rt.h): a library it needs would be loaded into its
// namespace again in every image the program executes, libc's every
// open, read and map a call the supervisor decides. The loader alone,
// in every namespace already, may be named.
func TestLibraryNeedsNoLibc(t *testing.T) {
	path := filepath.Join(fixtures(t), auditLib)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if lib != "ld-linux-x86-64.so.2" {
			t.Errorf("%s needs %s (DT_NEEDED): its namespace would load it in every executed image", path, lib)
		}
	}
}

// TestRuntimeMatchesGlibc checks the audit library's runtime against
// glibc: its formatting, messages, number parsing and string functions
// (testdata/runtime.c compares each with glibc's own, found past it), so
// that the library's failures and lines read as they did with glibc.
// TestNames checks the audit library's sets of names, which every binding
// looks its symbol up in (testdata/names.c).
func TestNames(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("SKIPPED: %v (scripts/install-deps.sh installs it)", err)
	}
	prog := filepath.Join(t.TempDir(), "names")
	args := []string{"-O2", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-o", prog, "testdata/names.c", filepath.Join("..", "..", "audit", "names.c")}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if out, err := exec.Command(prog).CombinedOutput(); err != nil || string(out) != "ok\n" {
		t.Errorf("%s: %v\n%s", prog, err, out)
	}
	out, err := exec.Command(prog, "full").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.HasPrefix(string(out), "died: more than") {
		t.Errorf("%s full: %v\n%s", prog, err, out)
	}
}

func TestRuntimeMatchesGlibc(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("SKIPPED: %v (scripts/install-deps.sh installs it)", err)
	}
	prog := filepath.Join(t.TempDir(), "runtime")
	args := []string{"-O2", "-D_GNU_SOURCE", "-U_FORTIFY_SOURCE", "-fno-builtin", "-Wall", "-Wextra", "-Werror", "-o", prog, "testdata/runtime.c"}
	for _, src := range []string{"rt_format.c", "rt_string.c", "rt_error.c"} {
		args = append(args, filepath.Join("..", "..", "audit", src))
	}
	if out, err := exec.Command("gcc", append(args, "-ldl")...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(prog).CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Errorf("%s: %v\n%s", prog, err, out)
	}
}
