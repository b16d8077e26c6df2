package cell_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// loadPolicy reads a policy of testdata.
func loadPolicy(t testing.TB, name string) *policy.Policy {
	t.Helper()
	p, _, err := policy.Load(filepath.Join("testdata", name), policy.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs prog in mode with the fixtures' policy and the scratch
// directory, and returns what prog printed (by WHAT) and the result.
func run(t *testing.T, scratch, mode string, extra ...string) (map[string]string, *cell.Result) {
	t.Helper()
	return runPolicy(t, policyName, scratch, mode, cell.CallersAnywhere, extra...)
}

// runPolicy is run with the policy of testdata named name, the
// supervisor finding callers in in.
func runPolicy(t *testing.T, name, scratch, mode string, in cell.CallersIn, extra ...string) (map[string]string, *cell.Result) {
	t.Helper()
	dir := fixtures(t)
	if err := os.WriteFile(filepath.Join(scratch, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := append([]string{progName, mode, scratch}, extra...)
	cmd := enforce.Command{Path: filepath.Join(dir, progName), Args: args, Stdout: &out, Stderr: &errOut,
		Env: append(os.Environ(), "PROG_CTOR_DIR="+filepath.Join(scratch, "ctor"))}
	// A hung program fails the test rather than the whole run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cell.Run(ctx, loadPolicy(t, name), cmd, cell.Options{Library: filepath.Join(dir, auditLib), CallersIn: in})
	if err != nil && res != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s\nsupervised: %+v", mode, err, out.String(), errOut.String(), res.Supervised)
	}
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", mode, err, errOut.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d, signal %v\nstdout:\n%s\nstderr:\n%s\nsupervised: %+v", mode, res.ExitCode, res.Signal, out.String(), errOut.String(), res.Supervised)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		what, rest, _ := strings.Cut(line, " ")
		got[what] = rest
	}
	t.Logf("%s: %v; supervised %+v", mode, got, res.Supervised)
	return got, res
}

// pid stands for any positive result: a process id.
const pid = "PID"

// TestCompartments runs prog in each mode and checks each call's result:
// getpid is allowed from libgetpid.so and libplug.so only, mkdir from
// prog only, and a denied mkdir fails with EPERM and creates nothing. The
// supervisor finds callers in the kernel's snapshots (as root), and
// again in /proc.
func TestCompartments(t *testing.T) {
	t.Run("snapshots", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("SKIPPED: the kernel's snapshots need root (eBPF), and this is uid", os.Geteuid())
		}
		testCompartments(t, cell.CallersInSnapshots)
	})
	t.Run("proc", func(t *testing.T) { testCompartments(t, cell.CallersInProc) })
}

func testCompartments(t *testing.T, in cell.CallersIn) {
	for _, tc := range []struct {
		mode string
		want map[string]string
		made []string // directories the mode creates
		// extra are prog's arguments after the scratch directory.
		extra func(fixtures, scratch string) []string
		// supervised are calls the supervisor must have decided, as
		// "OWNER SYSCALL ALLOWED".
		supervised []string
		// policy is the policy of testdata, if not policyName.
		policy string
		// check checks more of what prog printed.
		check func(t *testing.T, got map[string]string, res *cell.Result)
	}{
		{mode: "lib", want: map[string]string{"lib-getpid": pid, "lib-mkdir": "-1 EPERM"}},
		{mode: "main", want: map[string]string{
			"main-getpid": "-1 EPERM", "main-syscall-getpid": "-1 EPERM", "main-inline-getpid": "-1 EPERM"}},
		// Through their bindings, libc's openat is decided in the
		// kernel, as its caller's (audit/gate.c), after a tail call
		// too; through pointers to libc's fopen, by the supervisor.
		{mode: "stdio", want: map[string]string{"lib-fopen": "-1 EPERM", "lib-fopen-tail": "-1 EPERM", "main-fopen": "0 -", "lib-opendir": "-1 EPERM", "lib-open-2": "-1 EPERM",
			"main-varargs": "1 2 3 4 5 6 7 8 9 10 11 12 0.5 1.5 -"},
			check: inKernel("openat", "libmk.so")},
		{mode: "stdio-pointer", want: map[string]string{"lib-fopen": "-1 EPERM", "main-fopen": "0 -"},
			supervised: []string{"libmk.so openat false", "prog openat true"}},
		// A longjmp left fflush's gate without its return: its mark,
		// whose return address slot libmk.so's call then took, is
		// nobody's, and the supervisor finds libmk.so's open.
		{mode: "stdio-longjmp", want: map[string]string{"lib-fopen": "-1 EPERM"},
			supervised: []string{"libmk.so openat false"}},
		{mode: "ctor", want: map[string]string{"ctor-mkdir": "-1 EPERM"}},
		{mode: "loader", want: map[string]string{"loader-getpid": pid, "loader-mkdir": "-1 ENOENT"}},
		{mode: "thread", want: map[string]string{"thread-getpid": pid, "thread-mkdir": "-1 EPERM"}},
		// Four threads' stdio at once: each thread's calls through
		// bindings are its own (the kernel decides them), and the
		// supervisor's workers decide those through pointers
		// concurrently, each exactly once.
		{mode: "stdio-threads", want: map[string]string{
			"threads-lib-fopen-denied": "200 -", "threads-main-fopen-allowed": "200 -",
			"threads-lib-pointer-denied": "200 -", "threads-main-pointer-allowed": "200 -"},
			check: supervisedCounts(map[string]int{"libmk.so openat false": 200, "prog openat true": 200})},
		{mode: "fork", want: map[string]string{
			"child-getpid": pid, "child-mkdir": "-1 EPERM", "grandchild-getpid": pid, "grandchild-mkdir": "-1 EPERM"}},
		{mode: "dlopen", extra: func(dir, _ string) []string { return []string{filepath.Join(dir, libplug)} },
			want:       map[string]string{"plug-getpid": pid, "plug-inline-getpid": pid, "plug-mkdir": "-1 EPERM"},
			supervised: []string{"libplug.so getpid true", "prog openat true"}},
		{mode: "errno", want: map[string]string{"errno-denied": "-1 EPERM", "errno-allowed": "0"}},
		{mode: "mkdir", want: map[string]string{"main-mkdir": "0 -"}, made: []string{"main"}},
		// The vDSO's fallback makes the call from the vDSO's code.
		{mode: "vdso", want: map[string]string{"lib-cputime": "0 -", "main-cputime": "-1 EPERM"},
			supervised: []string{"libgetpid.so clock_gettime true", "prog clock_gettime false"}},
		// prog executes itself: the new image runs under the filter of
		// the first, with the stubs of its slots.
		{mode: "exec", extra: execProg("lib"), want: map[string]string{"lib-getpid": pid, "lib-mkdir": "-1 EPERM"}},
		{mode: "exec", extra: execProg("main"), want: map[string]string{
			"main-getpid": "-1 EPERM", "main-syscall-getpid": "-1 EPERM", "main-inline-getpid": "-1 EPERM"},
			supervised: []string{"prog getpid false"}},
		{mode: "exec", extra: execProg("stdio"), want: map[string]string{"lib-fopen": "-1 EPERM", "main-fopen": "0 -"},
			check: inKernel("openat", "libmk.so")},
		{mode: "exec", extra: execProg("stdio-pointer"), want: map[string]string{"lib-fopen": "-1 EPERM", "main-fopen": "0 -"},
			supervised: []string{"libmk.so openat false", "prog openat true"}},
		// An image executed by an executed image inherits the same.
		{mode: "exec", extra: func(dir, scratch string) []string {
			return append(execProg("exec")(dir, scratch), execProg("lib")(dir, scratch)...)
		}, want: map[string]string{"lib-getpid": pid, "lib-mkdir": "-1 EPERM"}},
		// libmk.so starts prog again, in lib mode, by vfork and by
		// posix_spawn: the children share its memory until their
		// execve, whose new image runs under the same filter.
		{mode: "vfork", extra: execProg("lib"), want: map[string]string{
			"vfork-status": "0 -", "spawn-status": "0 -", "lib-getpid": pid, "lib-mkdir": "-1 EPERM"}},
		// pthread_cancel's getpid comes from libc, called by libgetpid.so;
		// so does the cancelled thread's, from the signal handler that
		// interrupted libgetpid.so's stub.
		{mode: "cancel", want: map[string]string{"cancel-pending": "canceled 1", "cancel-blocked": "canceled 2"},
			supervised: []string{"libgetpid.so getpid true"}},
		// The policy allows x86_64 alone and kills on the other ABIs
		// (bad-arch), whoever makes the call: mkdir by int $0x80 or with
		// the x32 bit kills the child that makes it, by SIGSYS, before
		// the call runs. (A kernel built without the x32 ABI fails an
		// x32 call with ENOSYS: a missing directory alone would not tell
		// that the filter stopped it.)
		{mode: "abi", want: map[string]string{
			"lib-int80": "killed SIGSYS", "lib-x32": "killed SIGSYS",
			"main-int80": "killed SIGSYS", "main-x32": "killed SIGSYS"}},
		// Code libmk.so wrote and made executable is no object's: its
		// call goes to the supervisor, which finds it in anonymous
		// memory, which no compartment of the policy owns.
		{mode: "jit", want: map[string]string{"lib-jit-mkdir": "-1 EPERM"},
			supervised: []string{"[anon-exec] mkdir false"}},
		// A compartment named [anon-exec] owns it, and may make
		// directories.
		{mode: "jit", policy: "prog-anon-exec.toml", want: map[string]string{"lib-jit-mkdir": "0 -"}, made: []string{"jit"},
			supervised: []string{"[anon-exec] mkdir true"}},
		// prog may call mprotect, mmap, munmap and madvise, but the
		// stub window and the runtime's code are sealed: their
		// protection stays what the audit library left, and the stubs
		// keep working.
		{mode: "window", want: map[string]string{
			"window-found": "0 -", "window-mprotect": "-1 EPERM", "window-mmap": "-1 EPERM",
			"window-munmap": "-1 EPERM", "window-madvise": "-1 EPERM", "window-getpid": pid,
			"libc-found": "0 -", "libc-mprotect": "-1 EPERM", "loader-found": "0 -", "loader-mprotect": "-1 EPERM"},
			check: stubWindow},
	} {
		name := tc.mode
		if tc.extra != nil && tc.mode == "exec" {
			name += "-" + tc.extra("", "")[1]
		}
		file := policyName
		if tc.policy != "" {
			file = tc.policy
			name += "-" + strings.TrimSuffix(file, ".toml")
		}
		t.Run(name, func(t *testing.T) {
			var extra []string
			scratch := t.TempDir()
			if tc.extra != nil {
				extra = tc.extra(fixtures(t), scratch)
			}
			got, res := runPolicy(t, file, scratch, tc.mode, in, extra...)
			checkCallers(t, res, in)
			seen := map[string]bool{}
			for _, c := range res.Supervised {
				seen[fmt.Sprintf("%s %s %t", c.Owner, c.Syscall, c.Allowed)] = true
				if c.Owner == cell.OwnerUnattributed {
					t.Errorf("unattributed: %+v", c)
				}
			}
			for _, want := range tc.supervised {
				if !seen[want] {
					t.Errorf("supervised %+v, want %q among them", res.Supervised, want)
				}
			}
			if tc.check != nil {
				tc.check(t, got, res)
			}
			for what, want := range tc.want {
				if g := got[what]; g != want && !(want == pid && isPid(g)) {
					t.Errorf("%s: %q, want %q", what, g, want)
				}
			}
			entries, err := os.ReadDir(scratch)
			if err != nil {
				t.Fatal(err)
			}
			var made []string
			for _, e := range entries {
				if e.IsDir() {
					made = append(made, e.Name())
				}
			}
			if !slices.Equal(made, tc.made) {
				t.Errorf("directories made: %v, want %v", made, tc.made)
			}
		})
	}
}

// checkCallers checks where the supervisor found callers: never in
// snapshots when told to read /proc; in snapshots at least once, if it
// looked for any, when told to use them (a thread not switched out yet
// is looked for in /proc).
func checkCallers(t *testing.T, res *cell.Result, in cell.CallersIn) {
	t.Helper()
	c := res.Callers
	switch {
	case in == cell.CallersInProc && c.Snapshots > 0:
		t.Errorf("callers found in %d snapshots, told to read /proc", c.Snapshots)
	case in == cell.CallersInSnapshots && c.Proc > 0 && c.Snapshots == 0:
		t.Errorf("callers found in /proc %d times and never in snapshots", c.Proc)
	}
}

// execProg are the arguments that have prog execute itself in mode.
func execProg(mode string) func(fixtures, scratch string) []string {
	return func(dir, scratch string) []string {
		return []string{filepath.Join(dir, progName), mode, scratch}
	}
}

// supervisedCounts checks how many calls of each kind, "OWNER SYSCALL
// ALLOWED", the supervisor decided.
func supervisedCounts(want map[string]int) func(*testing.T, map[string]string, *cell.Result) {
	return func(t *testing.T, _ map[string]string, res *cell.Result) {
		got := map[string]int{}
		for _, c := range res.Supervised {
			got[fmt.Sprintf("%s %s %t", c.Owner, c.Syscall, c.Allowed)] = c.Count
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("supervised %q: %d calls, want %d", k, got[k], n)
			}
		}
	}
}

// inKernel checks that the supervisor decided no call named syscall, and
// that the kernel stopped denied's, whose denial the supervisor only
// reports.
func inKernel(syscall, denied string) func(*testing.T, map[string]string, *cell.Result) {
	return func(t *testing.T, _ map[string]string, res *cell.Result) {
		for _, c := range res.Supervised {
			if c.Syscall == syscall && c.Owner != cell.OwnerStartUp {
				t.Errorf("the supervisor decided %+v, the kernel should have", c)
			}
		}
		if !slices.ContainsFunc(res.Denied, func(d cell.Denied) bool { return d.Owner == denied && d.Syscall == syscall }) {
			t.Errorf("denied %+v, want %s's %s among them", res.Denied, denied, syscall)
		}
	}
}

// stubWindow checks that the mapping prog's window mode tried to undo is
// the whole stub window the launcher chose, and that libgetpid.so's
// getpid is bound to a stub in its slot.
func stubWindow(t *testing.T, got map[string]string, res *cell.Result) {
	l := res.Start.Layout
	end := l.Window + uint64(len(l.Slots))<<l.SlotShift
	if want := fmt.Sprintf("%x-%x -", l.Window, end); got["window-mapping"] != want {
		t.Errorf("window-mapping: %q, want %q", got["window-mapping"], want)
	}
	stub, err := strconv.ParseUint(strings.TrimSuffix(got["window-stub"], " -"), 16, 64)
	slot := slices.Index(l.Slots, "libgetpid.so")
	if err != nil || slot < 0 || stub < l.Window || (stub-l.Window)>>l.SlotShift != uint64(slot) {
		t.Errorf("window-stub: %q, want an address in slot %d of %v, from %#x by %d bits",
			got["window-stub"], slot, l.Slots, l.Window, l.SlotShift)
	}
}

// isPid says whether a result line holds a positive number.
func isPid(s string) bool {
	n, rest, _ := strings.Cut(s, " ")
	v, err := strconv.Atoi(n)
	return err == nil && v > 0 && rest == "-"
}

// TestIdentityAgrees checks that the audit library and the supervisor put
// the same objects in the same compartments: what the library reported at
// start against the rule applied to the same files.
func TestIdentityAgrees(t *testing.T) {
	_, res := run(t, t.TempDir(), "lib")
	p := loadPolicy(t, policyName)
	want := map[string]string{progName: "prog", "libgetpid.so": "libgetpid.so", "libmk.so": "libmk.so", "libc.so.6": ""}
	for _, o := range res.Start.Objects {
		if o.Ino == 0 {
			continue // the vDSO
		}
		got, err := cell.CompartmentOf(p, o.Dev, o.Ino, o.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got != o.Compartment {
			t.Errorf("%s: the supervisor says %q, the audit library %q", o.Path, got, o.Compartment)
		}
		if w, ok := want[filepath.Base(o.Path)]; ok && w != o.Compartment {
			t.Errorf("%s: compartment %q, want %q", o.Path, o.Compartment, w)
		}
		delete(want, filepath.Base(o.Path))
	}
	if len(want) > 0 {
		t.Errorf("objects not reported: %v", want)
	}
}

// TestRunRefuses checks what Run refuses before it starts anything.
func TestRunRefuses(t *testing.T) {
	dir := fixtures(t)
	prog := filepath.Join(dir, progName)
	p := loadPolicy(t, policyName)
	for _, tc := range []struct {
		name    string
		library string
		policy  *policy.Policy
		want    string
	}{
		{"no library", filepath.Join(dir, "nosuch.so"), p, "make build puts it next to syscell"},
		{"not an audit library", filepath.Join(dir, "libgetpid.so"), p, "does not define la_version"},
		{"no compartments", filepath.Join(dir, auditLib), &policy.Policy{Default: policy.ActEPERM}, "no compartments"},
	} {
		cmd := enforce.Command{Path: prog, Args: []string{prog, "mkdir", t.TempDir()}}
		_, err := cell.Run(context.Background(), tc.policy, cmd, cell.Options{Library: tc.library})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
