package cell_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// The attack fixtures: evil, which runs one attack of libevil.so's on
// libgood.so's rights (testdata/evil.c, libevil.c), and slowstart, an
// image whose loading waits for a signal (libslow.c).
const (
	evilName    = "evil"
	evilPolicy  = "evil.toml"
	goodPlug    = "libgoodplug.so"
	slowStart   = "slowstart"
	libgoodSlot = "2" // libgood.so's place in evil.toml
)

// evilBuilds compiles the attack fixtures into the fixtures' directory,
// once per test binary.
var evilBuilds = sync.OnceValues(func() (string, error) {
	dir, err := builds()
	if err != nil {
		return dir, err
	}
	for _, lib := range []string{"libevil", "libgood", "libgoodplug", "libslow"} {
		if err := gcc("-shared", "-fPIC", "-o", filepath.Join(dir, lib+".so"), "testdata/"+lib+".c"); err != nil {
			return dir, err
		}
	}
	if err := gcc("-o", filepath.Join(dir, slowStart), "testdata/slowstart.c",
		"-L"+dir, "-lslow", "-Wl,-z,now", "-Wl,-rpath,"+dir); err != nil {
		return dir, err
	}
	return dir, gcc("-o", filepath.Join(dir, evilName), "testdata/evil.c",
		"-L"+dir, "-levil", "-lgood", "-ldl", "-Wl,-rpath,"+dir)
})

// evilFixtures returns the fixtures' directory with the attack fixtures
// built, or skips as fixtures does.
func evilFixtures(t testing.TB) string {
	t.Helper()
	dir := fixtures(t)
	if _, err := evilBuilds(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// attack is one attack and what must come of it.
type attack struct {
	name string
	// mode and args are evil's, after the scratch directory.
	mode string
	args func(fixtures, scratch string) []string
	// policy is the policy of testdata, evilPolicy if empty, and edit
	// changes it.
	policy string
	edit   func(*policy.Policy)
	opt    cell.Options
	// want are lines evil must print, by WHAT.
	want map[string]string
	// made are the directories (and files) the attack makes in the
	// scratch directory: none, where the attack is stopped.
	made []string
	// denied are calls the supervisor must have denied, "OWNER SYSCALL".
	denied []string
}

// runAttack runs evil in a.mode and checks what it printed, what it
// made and what the supervisor denied.
func runAttack(t *testing.T, a attack) (map[string]string, *cell.Result) {
	t.Helper()
	dir := evilFixtures(t)
	scratch := t.TempDir()
	args := []string{evilName, a.mode, scratch}
	if a.args != nil {
		args = append(args, a.args(dir, scratch)...)
	}
	pol := a.policy
	if pol == "" {
		pol = evilPolicy
	}
	var out, errOut bytes.Buffer
	cmd := enforce.Command{Path: filepath.Join(dir, evilName), Args: args, Stdout: &out, Stderr: &errOut}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opt := a.opt
	opt.Library = filepath.Join(dir, auditLib)
	p := loadPolicy(t, pol)
	if a.edit != nil {
		a.edit(p)
	}
	res, err := cell.Run(ctx, p, cmd, opt)
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", a.name, err, out.String(), errOut.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		what, rest, _ := strings.Cut(line, " ")
		got[what] = rest
	}
	t.Logf("%s: exit %d %v\nstdout:\n%s\nstderr:\n%s\ndenied: %+v\nsupervised: %+v",
		a.name, res.ExitCode, res.Signal, out.String(), errOut.String(), res.Denied, res.Supervised)
	if res.ExitCode != 0 {
		t.Errorf("exit %d, signal %v", res.ExitCode, res.Signal)
	}
	for what, want := range a.want {
		if got[what] != want {
			t.Errorf("%s: %q, want %q", what, got[what], want)
		}
	}
	entries, err := os.ReadDir(scratch)
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, e := range entries {
		made = append(made, e.Name())
	}
	if !slices.EqualFunc(made, a.made, nameMatches) {
		t.Errorf("made %v, want %v", made, a.made)
	}
	denied := map[string]bool{}
	for _, d := range res.Denied {
		denied[d.Owner+" "+d.Syscall] = true
	}
	for _, want := range a.denied {
		if !denied[want] {
			t.Errorf("denied %+v, want %q among them", res.Denied, want)
		}
	}
	return got, res
}

// nameMatches says whether name is want, or begins with want's text
// before a final "*".
func nameMatches(name, want string) bool {
	if prefix, ok := strings.CutSuffix(want, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return name == want
}

// TestForgedStartUp: a stack that begins at the loader's or libc's entry
// point is how a starting image's loader calls look to the unwinder, and
// start-up calls belong to no compartment. libevil.so forges one and
// calls libc's mkdir and execve: outside a real start-up (an exec the
// supervisor let run, until its image is loaded, in that process) the
// call is denied, and nothing is made. While another process's image is
// starting, the forged call is still this process's and denied; and the
// code that image's loader runs (an IFUNC resolver) may make only the
// calls a loader makes.
func TestForgedStartUp(t *testing.T) {
	for _, a := range []attack{
		{name: "loader", mode: "forged-loader", denied: []string{"[start-up] mkdir"}},
		{name: "libc", mode: "forged-libc", denied: []string{"[start-up] mkdir"}},
		{name: "exec", mode: "forged-exec", denied: []string{"[start-up] execve"}},
		{name: "during-exec", mode: "forged-during-exec",
			args:   func(dir, _ string) []string { return []string{filepath.Join(dir, slowStart)} },
			want:   map[string]string{"slow-mkdir": "-1 EPERM", "slowstart": "exited 0"},
			denied: []string{"[start-up] mkdir"}},
	} {
		t.Run(a.name, func(t *testing.T) { runAttack(t, a) })
	}
}

// TestSealedCode: libevil.so may call mprotect and mmap, but every
// object's code is sealed as the loader maps it (mseal): it can
// neither make libgood.so's code writable nor map memory over it, nor
// that of a library loaded later by dlopen, nor, in an image an exec
// started, the range where libgood.so's code lay in the first image,
// which the filter still gives libgood.so's rights. Were any of these
// allowed, libevil.so would write a mkdir there and call it.
func TestSealedCode(t *testing.T) {
	sealed := map[string]string{"-mprotect": "-1 EPERM", "-mmap": "-1 EPERM"}
	want := func(what string) map[string]string {
		out := map[string]string{}
		for k, v := range sealed {
			out[what+k] = v
		}
		return out
	}
	for _, a := range []attack{
		{name: "loaded", mode: "rewrite", want: want("rewrite")},
		{name: "dlopen", mode: "rewrite-dlopen", want: want("rewrite-dlopen"),
			args: func(dir, _ string) []string { return []string{filepath.Join(dir, goodPlug)} }},
		{name: "exec", mode: "exec", want: want("rewrite-reserved"),
			args: func(dir, scratch string) []string {
				return []string{filepath.Join(dir, evilName), "reserved", scratch, libgoodSlot}
			}},
	} {
		t.Run(a.name, func(t *testing.T) { runAttack(t, a) })
	}
}

// TestIdentityByLoad: code is a compartment's only at the addresses the
// loader mapped for it, in pages never written since. libevil.so maps a
// private copy of libgood.so's file, writes a mkdir into it and calls
// it: the copy is anonymous code to the supervisor, as is a copy sealed
// after it was written, and one mapped unwritten, seen by the
// supervisor, and written after.
func TestIdentityByLoad(t *testing.T) {
	for _, mode := range []string{"copy", "copy-sealed", "copy-late"} {
		a := attack{name: mode, mode: mode, want: map[string]string{mode: "-1 EPERM"},
			denied: []string{"[anon-exec] mkdir"}}
		t.Run(mode, func(t *testing.T) { runAttack(t, a) })
	}
}

// TestPinnedStubs: every slot of the stub window holds every stub, and a
// stub's syscall instruction may make only the call it was made for.
// libevil.so jumps to the instruction libgood.so's getpid stub executes,
// with mkdir's number in rax: mkdir, which libgood.so may make, is
// denied there.
func TestPinnedStubs(t *testing.T) {
	runAttack(t, attack{name: "stub-number", mode: "stub-number", want: map[string]string{"stub-number": "-1 EPERM"},
		denied: []string{"libgood.so mkdir"}})
}

// TestInherentHoles: what deciding by instruction pointer and stack in
// one address space cannot stop (docs/THREAT-MODEL.md), each asserted
// as documented so that the document stays true. libevil.so calls
// libgood.so's exported function (a confused deputy); calls libgood.so's
// own stub of mkdir; calls libc's mkdir with a return address in
// libgood.so's code, which the unwinder believes; returns from a signal
// handler through a frame that sends it to libgood.so's stub with mkdir's
// registers. Each makes its directory with libgood.so's rights. A forged
// stack that begins at the program's own entry point makes the call the
// runtime's, which the policy's [runtime] compartment bounds: mkdir is
// not among its calls.
func TestInherentHoles(t *testing.T) {
	for _, mode := range []string{"deputy", "stub-borrow", "forged-return", "sigreturn"} {
		a := attack{name: mode, mode: mode, want: map[string]string{mode: "0 -"}, made: []string{mode}}
		t.Run(mode, func(t *testing.T) { runAttack(t, a) })
	}
	t.Run("forged-program", func(t *testing.T) {
		runAttack(t, attack{name: "forged-program", mode: "forged-program", denied: []string{"[runtime] mkdir"}})
	})
	// libevil.so's code runs inside libgood.so's call into libc (a
	// stream's write function) and calls libc's mkdtemp through a
	// pointer, which passes no gate of its own: libc's mkdir is taken
	// for libgood.so's, whose gate's mark is live (audit/gate.c).
	t.Run("callback", func(t *testing.T) {
		runAttack(t, attack{name: "callback", mode: "callback", want: map[string]string{"callback": "0 -"},
			made: []string{"callback-*"}})
	})
	// Through libevil.so's own binding of mkdtemp, its gate marks the
	// call its own, and the kernel denies the mkdir.
	t.Run("callback-bound", func(t *testing.T) {
		runAttack(t, attack{name: "callback-bound", mode: "callback-bound",
			want: map[string]string{"callback-bound": "-1 EPERM"}, denied: []string{"libevil.so mkdir"}})
	})
}

// TestExecBounded: an exec never widens what the compartment that makes
// it may do. libevil.so may execute programs but not make directories;
// the shell and mkdir have compartments that may, which libgood.so may
// start them with. libevil.so's sh -c 'mkdir ...' runs bounded by its own
// calls: the shell may not even start mkdir (vfork, which its own
// compartment allows and libevil.so's does not: the shell's binding of
// vfork is to libevil.so's stub, which the kernel denies), and nothing
// is made; libgood.so's makes its directory.
func TestExecBounded(t *testing.T) {
	shell := func(name string) func(string, string) []string {
		return func(_, scratch string) []string {
			return []string{"/bin/sh", "-c", "mkdir " + filepath.Join(scratch, name)}
		}
	}
	runAttack(t, attack{name: "evil", mode: "exec-evil", policy: "evil-exec.toml", args: shell("widened"),
		want: map[string]string{"exec-evil": "exited 2"}, denied: []string{"libevil.so vfork"}})
	runAttack(t, attack{name: "good", mode: "exec-good", policy: "evil-exec.toml", args: shell("granted"),
		want: map[string]string{"exec-good": "exited 0"}, made: []string{"granted"}})
}

// TestIOURing: an io_uring ring's operations run without a system call
// that names them, whichever library wrote them into the ring's queue.
// A ring may be set up only by a compartment that may call
// io_uring_setup (libgood.so's, not libevil.so's), and only where the
// policy names the operations rings may make, which are then all its
// rings can make: libevil.so writes a mkdirat into libgood.so's ring,
// which libgood.so submits, and the kernel refuses it (EACCES) while
// libgood.so's nop runs. A ring the kernel would poll on its own, with
// no call at all, is refused.
func TestIOURing(t *testing.T) {
	nop := func(p *policy.Policy) { p.IOURing = []string{"nop", "read", "write"} }
	for _, a := range []attack{
		{name: "no operations", mode: "uring", want: map[string]string{"ring-setup": "-1 EPERM"},
			denied: []string{"libgood.so io_uring_setup"}},
		{name: "not granted", mode: "uring-setup", edit: nop, want: map[string]string{"evil-uring-setup": "-1 EPERM"},
			denied: []string{"libevil.so io_uring_setup"}},
		{name: "restricted", mode: "uring", edit: nop,
			want: map[string]string{"ring-setup": "0 -", "ring-nop": "0 -", "ring-mkdirat": "-13 EACCES"}},
		{name: "sqpoll", mode: "uring-sqpoll", edit: nop, want: map[string]string{"ring-sqpoll": "-22 EINVAL"},
			denied: []string{"libgood.so io_uring_setup"}},
	} {
		t.Run(a.name, func(t *testing.T) { runAttack(t, a) })
	}
}

// TestProcMem: the kernel may let a process write its own code through
// /proc/PID/mem whatever its protection or seal (cell.ProcMemWrites).
// With DenyProcMem, libevil.so can open its process's mem file for
// writing by no name, and makes nothing; without, where the kernel lets
// such writes through, it rewrites libgood.so's code in place and makes
// its directory with libgood.so's rights (docs/THREAT-MODEL.md).
func TestProcMem(t *testing.T) {
	denied := map[string]string{"procmem-open": "-1 EPERM", "procmem-thread": "-1 EPERM", "procmem-pid": "-1 EPERM",
		"procmem-reopen": "-1 EPERM"}
	t.Run("denied", func(t *testing.T) {
		runAttack(t, attack{name: "denied", mode: "procmem", opt: cell.Options{DenyProcMem: true}, want: denied,
			denied: []string{"libevil.so openat"}})
	})
	t.Run("allowed", func(t *testing.T) {
		writes, why := cell.ProcMemWrites()
		a := attack{name: "allowed", mode: "procmem", want: map[string]string{"procmem-open": "0 -"}}
		if writes {
			a.want["procmem-call"], a.made = "0 -", []string{"procmem"}
		}
		t.Logf("writes through /proc/PID/mem reach sealed code: %t (%s)", writes, why)
		runAttack(t, a)
	})
}
