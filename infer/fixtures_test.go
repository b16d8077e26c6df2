package infer

import (
	"bufio"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/fixtures"
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/record"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.Remove()
	if dir, err := buildOwn(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// testCache is one cache directory for every test of the package, so
// that libc is read once.
var testCache = sync.OnceValue(func() *Cache {
	dir, err := os.MkdirTemp("", "syscell-infer-cache-")
	if err != nil {
		return nil
	}
	return &Cache{Dir: dir}
})

func options() Options {
	return Options{Env: []string{}, LoaderCache: "/etc/ld.so.cache", Runtime: attribute.DefaultRuntime(), Cache: testCache()}
}

// ownLibs are this package's fixtures: testdata/NAME.c becomes
// libNAME.so, and main.c the program main, which needs them all.
var ownLibs = []string{"chain_b", "chain_a", "numbers", "table", "pointers", "stdio", "tables", "flags_set", "flags_clear", "ifunc", "sections"}

// buildOwn compiles this package's fixtures once, as Debian builds: -O2,
// no frame pointers.
var buildOwn = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "syscell-infer-fixtures-")
	if err != nil {
		return "", err
	}
	gcc := func(args ...string) error {
		args = append([]string{"-O2", "-fomit-frame-pointer", "-Wall", "-Werror"}, args...)
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			return errors.New("gcc " + strings.Join(args, " ") + ": " + err.Error() + "\n" + string(out))
		}
		return nil
	}
	for _, lib := range ownLibs {
		args := []string{"-shared", "-fPIC", "-o", filepath.Join(dir, "lib"+lib+".so"), filepath.Join("testdata", lib+".c")}
		switch lib {
		case "chain_a":
			args = append(args, "-L"+dir, "-lchain_b", "-Wl,-rpath,"+dir)
		case "tables":
			args = append(args, "-Wl,-e,tables_start")
		case "flags_set", "flags_clear", "ifunc":
			// Bound at start, so that the loader's lazy binding, which
			// can reach any function whose address is taken, adds
			// nothing to what their calls of libc can do.
			args = append(args, "-Wl,-z,now")
		}
		if err := gcc(args...); err != nil {
			return "", err
		}
	}
	args := []string{"-o", filepath.Join(dir, "main"), filepath.Join("testdata", "main.c"), "-L" + dir, "-Wl,-rpath," + dir}
	for _, lib := range ownLibs {
		args = append(args, "-l"+lib)
	}
	return dir, gcc(args...)
})

func ownFixtures(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("SKIPPED: no gcc to build the fixtures: %v", err)
	}
	dir, err := buildOwn()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// byBase indexes a recording's compartments by file name.
func byBase(rec *record.Recording) map[string]*record.Compartment {
	out := map[string]*record.Compartment{}
	for _, c := range rec.Compartments {
		name := c.Name
		if c.Path != "" {
			name = filepath.Base(c.Path)
		}
		out[name] = c
	}
	return out
}

// TestInferFixtures checks the inference of this package's fixtures
// against testdata/inferred.txt.
func TestInferFixtures(t *testing.T) {
	dir := ownFixtures(t)
	res, err := Infer(filepath.Join(dir, "main"), options())
	if err != nil {
		t.Fatal(err)
	}
	got := byBase(res.Recording())
	forEachVector(t, "inferred.txt", func(n int, fields []string) {
		c := got[fields[0]]
		if c == nil {
			t.Errorf("inferred.txt:%d: no compartment %s", n, fields[0])
			return
		}
		switch fields[1] {
		case "all":
			if len(c.Calls) < len(allCalls.Names()) {
				t.Errorf("inferred.txt:%d: %s can make %d calls, want any", n, fields[0], len(c.Calls))
			}
		case "include", "exclude":
			for _, call := range fields[2:] {
				if _, has := c.Calls[call]; has != (fields[1] == "include") {
					t.Errorf("inferred.txt:%d: %s %s %s: it has %v", n, fields[0], fields[1], call, sortedNames(c.Calls))
				}
			}
		default:
			t.Fatalf("inferred.txt:%d: %q is not include, exclude or all", n, fields[1])
		}
	})
}

// forEachVector calls check with the number and fields of each line of
// testdata/name, blank lines and comments aside.
func forEachVector(t *testing.T, name string, check func(n int, fields []string)) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 && !strings.HasPrefix(fields[0], "#") {
			check(n, fields)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// allCalls is every x86_64 call.
var allCalls = Calls{All: true}

// TestExpectedAttribution checks the inference against every call the
// attribution rule gives each owner in each mode of the attribution
// fixtures (fixtures/testdata/attribution.txt): what a recording of them
// holds, so that none would be recorded but not inferred.
func TestExpectedAttribution(t *testing.T) {
	dir := fixtures.Require(t)
	modes, err := fixtures.Expectations()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range slices.Sorted(maps.Keys(modes)) {
		t.Run(mode, func(t *testing.T) {
			args := fixtures.Args(dir, mode)
			opt := options()
			if mode == "dlopen" {
				opt.Dlopen = []string{args[2]}
			}
			inferred := inferAll(t, args, mode, opt)
			got, union := byBase(inferred), unionOf(inferred)
			for owner, calls := range modes[mode] {
				var have map[string]uint64
				switch owner {
				case record.AnonExecName:
					continue
				case record.StartUpName:
					have = union
				default:
					if c := got[owner]; c != nil {
						have = c.Calls
					}
				}
				for _, call := range append(slices.Clone(calls.Must), calls.May...) {
					if _, ok := have[call]; !ok {
						t.Errorf("%s: %s is recorded but not inferred", owner, call)
					}
				}
			}
		})
	}
}

// inferAll infers the program of args and, for mode exec, the program it
// executes.
func inferAll(t *testing.T, args []string, mode string, opt Options) *record.Recording {
	t.Helper()
	progs := []string{args[0]}
	if mode == "exec" {
		progs = append(progs, args[2])
	}
	var recs []*record.Recording
	for _, p := range progs {
		res, err := Infer(p, opt)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, res.Recording())
	}
	rec, err := record.Merge(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestRecordedFixtures records this package's fixtures and every mode of
// the attribution fixtures, and checks that every call recorded is
// inferred for the same compartment.
func TestRecordedFixtures(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: recording loads an eBPF program, which needs root")
	}
	own := ownFixtures(t)
	dir := fixtures.Require(t)
	modes, err := fixtures.Expectations()
	if err != nil {
		t.Fatal(err)
	}
	runs := [][]string{{filepath.Join(own, "main"), "chain", "numbers", "table", "pointers", "stdio", "tables", "flags", "ifunc", "sections"}}
	for _, mode := range slices.Sorted(maps.Keys(modes)) {
		runs = append(runs, fixtures.Args(dir, mode))
	}
	for _, args := range runs {
		t.Run(filepath.Base(args[0])+" "+strings.Join(args[1:2], ""), func(t *testing.T) {
			checkBound(t, recordRun(t, args), args[0])
		})
	}
}

// recordRun records a command, which must succeed.
func recordRun(t *testing.T, args []string) *record.Recording {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	rec, state, err := record.Run(context.Background(), cmd, record.Options{})
	if errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("SKIPPED: the recorder's eBPF program cannot be loaded: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !state.Success() {
		t.Fatalf("%s: %v", strings.Join(args, " "), state)
	}
	if rec.Lossy() {
		t.Fatalf("%s: the recording is lossy:\n%s", strings.Join(args, " "), rec.Summary())
	}
	return rec
}

// TestNames checks the names the fixtures' code and data point to
// against testdata/names.txt.
func TestNames(t *testing.T) {
	dir := ownFixtures(t)
	forEachVector(t, "names.txt", func(n int, fields []string) {
		img, err := image.Open(filepath.Join(dir, fields[0]))
		if err != nil {
			t.Fatal(err)
		}
		names := Analyse(img).Strings
		for _, name := range fields[2:] {
			if slices.Contains(names, name) != (fields[1] == "include") {
				t.Errorf("names.txt:%d: %s %s %s: it has %v", n, fields[0], fields[1], name, names)
			}
		}
	})
}

// TestVDSOFallback checks, against testdata/vdso.txt, that a system call
// glibc makes only where the vDSO lacks a function is inferred where
// this machine's vDSO lacks it, and only there, and that the result
// records the functions it assumed.
func TestVDSOFallback(t *testing.T) {
	dir := ownFixtures(t)
	res, err := Infer(filepath.Join(dir, "main"), options())
	if err != nil {
		t.Fatal(err)
	}
	exported, err := attribute.VDSOFunctions()
	if err != nil {
		t.Fatal(err)
	}
	got := byBase(res.Recording())
	forEachVector(t, "vdso.txt", func(n int, fields []string) {
		if len(fields) != 3 {
			t.Fatalf("vdso.txt:%d: want FUNCTION CALL COMPARTMENT", n)
		}
		function, call, owner := fields[0], fields[1], fields[2]
		c := got[owner]
		if c == nil {
			t.Fatalf("vdso.txt:%d: no compartment %s", n, owner)
		}
		here := slices.Contains(exported, function)
		if _, has := c.Calls[call]; has == here {
			t.Errorf("vdso.txt:%d: %s has %s: %v, with the vDSO exporting %s: %v", n, owner, call, has, function, here)
		}
		if assumed := slices.Contains(res.VDSO, function); assumed != here {
			t.Errorf("vdso.txt:%d: %s assumed: %v (%v), with the vDSO exporting it: %v", n, function, assumed, res.VDSO, here)
		}
	})
}
