package enforce_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/internal/unprivtest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// TestActions checks that a denied call gets the action it is given, that
// a denied mkdir leaves no directory behind, and that the supervisor sees
// and reports every denial but the kernel's kills.
func TestActions(t *testing.T) {
	calls := fixture(t, "calls")
	for _, tc := range []struct {
		action string
		op     string
		signal syscall.Signal
		code   int
		stdout string
	}{
		{"kill", "mount", unix.SIGSYS, -1, ""},
		{"errno(EPERM)", "mount", 0, 0, "mount: errno 1\n"},
		{"trap", "mount", 0, 3, "sigsys: syscall 165 code 1\n"},
		{"kill", "mkdir", unix.SIGSYS, -1, ""},
		{"errno(EPERM)", "mkdir", 0, 0, "mkdir: errno 1\n"},
		{"trap", "mkdir", 0, 3, "sigsys: syscall 83 code 1\n"},
	} {
		t.Run(tc.action+"/"+tc.op, func(t *testing.T) {
			args := []string{calls, "sigsys", tc.op}
			dir := filepath.Join(t.TempDir(), "made")
			if tc.op == "mkdir" {
				args = append(args, dir)
			}
			res, stdout := launch(t, load(t, "deny.toml", tc.action), enforce.Options{}, args...)
			if res.Signal != tc.signal || res.ExitCode != tc.code || stdout != tc.stdout {
				t.Errorf("exit %d, signal %v, stdout %q; want exit %d, signal %v, stdout %q", res.ExitCode, res.Signal, stdout, tc.code, tc.signal, tc.stdout)
			}
			if exists(t, dir) {
				t.Errorf("the denied mkdir made %s", dir)
			}
			reported := len(res.Calls) == 1 && res.Calls[0].Syscall == tc.op && res.First != nil && res.First.Syscall == tc.op
			if kernel := tc.action != "errno(EPERM)"; kernel == reported || res.KilledFor != nil {
				t.Errorf("enforce mode reported %+v (first %v), killed for %+v; want a report only for errno, the kernel's kills unseen", res.Calls, res.First, res.KilledFor)
			}
		})
	}
}

// TestEverythingFiltered checks threads made before and after the main
// thread's call, a child, its thread and a grandchild.
func TestEverythingFiltered(t *testing.T) {
	_, stdout := launch(t, load(t, "deny.toml", "errno(EROFS)"), enforce.Options{}, fixture(t, "calls"), "family")
	want := "thread before: errno 30\nmain: errno 30\nthread after: errno 30\nchild thread: errno 30\nchild: errno 30\ngrandchild: errno 30\n"
	if stdout != want {
		t.Errorf("getppid under a policy denying it with EROFS:\n%s\nwant:\n%s", stdout, want)
	}
}

// TestReports checks the audit and complain reports against the calls the
// fixture makes outside audit.toml: three getppid, one mkdir, one mount,
// and six more getppid from its threads and processes.
func TestReports(t *testing.T) {
	calls := fixture(t, "calls")
	for _, tc := range []struct {
		mode    enforce.Mode
		stdout  []string
		madeDir bool
	}{
		{enforce.Audit, []string{"getppid: ok", "getppid: ok", "getppid: ok", "mkdir: ok", "mount: errno 14"}, true},
		{enforce.Complain, []string{"getppid: errno 30", "getppid: errno 30", "getppid: errno 30", "mkdir: errno 1", "mount: errno 1"}, false},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "made")
			res, stdout := launch(t, load(t, "audit.toml", ""), enforce.Options{Mode: tc.mode},
				calls, "ip", "getppid", "getppid", "getppid", "mkdir", dir, "mount", "family")
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(lines) != 1+len(tc.stdout)+6 || !slices.Equal(lines[1:1+len(tc.stdout)], tc.stdout) {
				t.Errorf("stdout:\n%s\nwant after the ip:\n%s\nand six lines from the family", stdout, strings.Join(tc.stdout, "\n"))
			}
			if res.ExitCode != 0 {
				t.Errorf("exit status %d", res.ExitCode)
			}
			if exists(t, dir) != tc.madeDir {
				t.Errorf("%s made the directory: %v, want %v", tc.mode, !tc.madeDir, tc.madeDir)
			}
			ip := ipOf(t, stdout)
			want := []enforce.Call{
				call("getppid", 9, ip, "errno(30)"),
				call("mkdir", 1, ip, "kill-process"),
				call("mount", 1, ip, "trap"),
			}
			if !slices.Equal(res.Calls, want) {
				t.Errorf("report:\n%s\nwant:\n%s", toJSON(res.Calls), toJSON(want))
			}
		})
	}
}

func call(name string, count int, ip uint64, action string) enforce.Call {
	abi, name, nr := x86_64(name)
	act, err := policy.ParseAction(action)
	if err != nil {
		panic(err)
	}
	return enforce.Call{ABI: abi, Syscall: name, Nr: nr, Count: count, FirstIP: ip, Action: act}
}

func toJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestLauncherQuiet runs a command under a policy that kills on futex and
// mmap, which the shim's Go runtime makes all the time: the command starts,
// and the policy does bite a program that needs them.
func TestLauncherQuiet(t *testing.T) {
	r := load(t, "nofutex.toml", "")
	res, stdout := launch(t, r, enforce.Options{}, fixture(t, "calls-static"), "getppid")
	if res.ExitCode != 0 || stdout != "getppid: ok\n" {
		t.Errorf("static fixture: exit %d, signal %v, stdout %q; want it to run", res.ExitCode, res.Signal, stdout)
	}
	res, _ = launch(t, r, enforce.Options{}, fixture(t, "calls"), "getppid")
	if res.Signal != unix.SIGSYS {
		t.Errorf("dynamically linked fixture, which maps its libraries: exit %d, signal %v; want SIGSYS", res.ExitCode, res.Signal)
	}
}

// TestExecDenied checks that the shim's own execve gets through a policy
// denying execve, and the command's does not.
func TestExecDenied(t *testing.T) {
	calls := fixture(t, "calls")
	for _, tc := range []struct {
		name     string
		override string
		mode     enforce.Mode
		stdout   string
		signal   syscall.Signal
		killed   bool
		marker   bool
	}{
		{"errno", "", enforce.Enforce, "exec: errno 1\n", 0, false, false},
		{"kill", "kill", enforce.Enforce, "", unix.SIGKILL, true, false},
		{"trap", "trap", enforce.Enforce, "", unix.SIGKILL, true, false},
		{"audit", "", enforce.Audit, "touch: ok\n", 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "marker")
			r := load(t, "noexec.toml", tc.override)
			res, stdout := launch(t, r, enforce.Options{Mode: tc.mode}, calls, "exec", calls, "touch", marker)
			if stdout != tc.stdout || res.Signal != tc.signal {
				t.Errorf("stdout %q, signal %v; want %q, %v", stdout, res.Signal, tc.stdout, tc.signal)
			}
			if exists(t, marker) != tc.marker {
				t.Errorf("the command's execve ran: %v, want %v", !tc.marker, tc.marker)
			}
			wantAction := r.Decide(syscalls.AuditArchX86_64, unix.SYS_EXECVE, [6]uint64{})
			if len(res.Calls) != 1 || res.Calls[0].Syscall != "execve" || res.Calls[0].Count != 1 || res.Calls[0].Action != wantAction {
				t.Errorf("report %+v, want one execve, %s", res.Calls, wantAction)
			}
			if (res.KilledFor != nil) != tc.killed || tc.killed && res.KilledFor.Syscall != "execve" {
				t.Errorf("killed for %+v, want a kill: %v", res.KilledFor, tc.killed)
			}
		})
	}
}

// TestNoLeakedDescriptors checks that the command gets the standard
// streams and nothing else, the listener in particular.
func TestNoLeakedDescriptors(t *testing.T) {
	calls := fixture(t, "calls")
	for _, mode := range []enforce.Mode{enforce.Enforce, enforce.Audit} {
		_, stdout := launch(t, load(t, "runtime-default", ""), enforce.Options{Mode: mode}, calls, "fds")
		if stdout != "fds: 0 1 2\n" {
			t.Errorf("%s: %q, want the standard streams only", mode, stdout)
		}
	}
}

func TestExitStatus(t *testing.T) {
	res, _ := launch(t, load(t, "runtime-default", ""), enforce.Options{}, fixture(t, "calls"), "exit", "7")
	if res.ExitCode != 7 || res.Signal != 0 {
		t.Errorf("exit %d, signal %v; want 7", res.ExitCode, res.Signal)
	}
}

func TestSignalsAndCancel(t *testing.T) {
	requireKernel(t)
	r := load(t, "runtime-default", "")
	signals := make(chan os.Signal, 1)
	signals <- unix.SIGTERM
	res, _ := launch(t, r, enforce.Options{Signals: signals}, "/bin/sleep", "60")
	if res.Signal != unix.SIGTERM {
		t.Errorf("forwarded SIGTERM: exit %d, signal %v", res.ExitCode, res.Signal)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := enforce.Run(ctx, r, enforce.Command{Path: "/bin/sleep", Args: []string{"sleep", "60"}}, enforce.Options{})
	if err != context.DeadlineExceeded || res.Signal != unix.SIGKILL {
		t.Errorf("cancelled: %+v, %v; want SIGKILL and DeadlineExceeded", res, err)
	}
}

// TestUnprivileged runs as nobody, whom the kernel lets install a filter
// only with no_new_privs, with either shim.
func TestUnprivileged(t *testing.T) {
	calls := fixture(t, "calls")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cShim := filepath.Join(filepath.Dir(exe), enforce.ShimName)
	for _, tc := range []struct{ name, shim string }{
		{"c", unprivtest.CopyExecutable(t, cShim, enforce.ShimName)},
		{"go", unprivtest.CopyTestBinary(t, "enforce.test")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := enforce.Options{Shim: tc.shim, SysProcAttr: nobody(t)}
			res, _ := launch(t, load(t, "runtime-default", ""), opt, "/bin/true")
			if res.ExitCode != 0 {
				t.Errorf("/bin/true under runtime-default: exit %d, signal %v", res.ExitCode, res.Signal)
			}
			res, stdout := launch(t, load(t, "deny.toml", "errno(EPERM)"), opt, calls, "mount")
			if stdout != "mount: errno 1\n" {
				t.Errorf("denied mount: %q, exit %d, signal %v", stdout, res.ExitCode, res.Signal)
			}
			opt.Mode = enforce.Complain
			res, stdout = launch(t, load(t, "audit.toml", ""), opt, calls, "ip", "getppid")
			if want := []enforce.Call{call("getppid", 1, ipOf(t, stdout), "errno(30)")}; !slices.Equal(res.Calls, want) {
				t.Errorf("complain as nobody: %+v, want %+v", res.Calls, want)
			}
		})
	}
}

func TestExecFails(t *testing.T) {
	calls := fixture(t, "calls")
	for _, mode := range []enforce.Mode{enforce.Enforce, enforce.Audit} {
		dir := filepath.Dir(calls)
		_, err := enforce.Run(context.Background(), load(t, "runtime-default", ""), enforce.Command{Path: dir, Args: []string{dir}}, enforce.Options{Mode: mode})
		if err == nil || !strings.Contains(err.Error(), "execute "+dir+": permission denied") {
			t.Errorf("%s: executing a directory: %v", mode, err)
		}
	}
}

// TestNoX86_64 checks that a policy Run cannot make a filter of fails
// with the reason, and that the shim, already started while the filter
// compiled, never runs the command.
func TestNoX86_64(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	calls := fixture(t, "calls")
	cmd := enforce.Command{Path: calls, Args: []string{calls, "touch", marker}}
	_, err := enforce.Run(context.Background(), load(t, "x86only.toml", ""), cmd, enforce.Options{})
	if err == nil || !strings.Contains(err.Error(), "must cover x86_64") {
		t.Errorf("policy without x86_64: %v", err)
	}
	if exists(t, marker) {
		t.Error("the command ran without its filter")
	}
}

func init() { filter.RegisterChild("enforce_test.noseccomp", noSeccomp) }

// noSeccomp runs the fixture from a process in which seccomp(2) fails, so
// that the shim cannot install its filter, and reports Run's error.
func noSeccomp(req, reply []byte) (int, error) {
	var argv []string
	if err := json.Unmarshal(req, &argv); err != nil {
		return 0, err
	}
	prog := []bpf.Instruction{
		bpf.LoadAbs(bpf.OffsetNr),
		bpf.Jump(bpf.JmpJeq, unix.SYS_SECCOMP, 0, 1),
		bpf.Ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
	}
	if _, err := filter.Install(prog, filter.FlagTSync); err != nil {
		return 0, err
	}
	p, err := policy.Parse("allow", []byte("version = 1\ndefault = \"allow\"\n"))
	if err != nil {
		return 0, err
	}
	_, err = enforce.Run(context.Background(), p.Resolve([]syscalls.Arch{syscalls.X86_64}), enforce.Command{Path: argv[0], Args: argv}, enforce.Options{})
	return copy(reply, []byte(err.Error())), nil
}

// TestInstallFails checks that the command never runs when the filter
// cannot be installed.
func TestInstallFails(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	msg, err := filter.Child{}.Run(context.Background(), "enforce_test.noseccomp", []string{fixture(t, "calls"), "touch", marker}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg), "permission denied") || !strings.Contains(string(msg), "did not start") {
		t.Errorf("Run said %q, want the install's EACCES", msg)
	}
	if exists(t, marker) {
		t.Error("the command ran without its filter")
	}
}

// TestShims checks that both shims, the C binary Run prefers next to
// syscell (TestMain builds it next to the test binary) and the Go one
// that any binary calling MaybeRunShim plays (the test binary, here),
// start the command under its filter, hand it no descriptor but the
// standard streams, pass it arguments that are not UTF-8 as they are,
// and report an execve that fails.
func TestShims(t *testing.T) {
	calls := fixture(t, "calls")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, shim string }{{"c", ""}, {"go", exe}} {
		t.Run(tc.name, func(t *testing.T) {
			opt := enforce.Options{Shim: tc.shim}
			dir := filepath.Join(t.TempDir(), "made")
			res, stdout := launch(t, load(t, "deny.toml", "errno(EPERM)"), opt, calls, "sigsys", "mkdir", dir)
			if res.ExitCode != 0 || stdout != "mkdir: errno 1\n" {
				t.Errorf("exit %d, stdout %q; want exit 0, stdout %q", res.ExitCode, stdout, "mkdir: errno 1\n")
			}
			if exists(t, dir) {
				t.Errorf("the denied mkdir made %s", dir)
			}
			if _, stdout := launch(t, load(t, "runtime-default", ""), opt, calls, "fds"); stdout != "fds: 0 1 2\n" {
				t.Errorf("descriptors: %q, want the standard streams only", stdout)
			}
			const latin1 = "caf\xe9"
			if _, stdout := launch(t, load(t, "runtime-default", ""), opt, "/bin/echo", latin1); stdout != latin1+"\n" {
				t.Errorf("echo %q: %q", latin1, stdout)
			}
			exeDir := filepath.Dir(calls)
			_, err := enforce.Run(context.Background(), load(t, "runtime-default", ""), enforce.Command{Path: exeDir, Args: []string{exeDir}}, opt)
			if err == nil || !strings.Contains(err.Error(), "execute "+exeDir+": permission denied") {
				t.Errorf("executing a directory: %v", err)
			}
		})
	}
}
