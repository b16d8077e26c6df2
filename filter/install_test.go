package filter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func init() {
	filter.RegisterChild("filter_test.install", installRole)
	filter.RegisterChild("filter_test.tsync", tsyncRole)
}

func TestDeniedCallGetsErrno(t *testing.T) {
	filtertest.RequireSeccomp(t)
	prog := program(t, rule{unix.SYS_GETPID, errno(unix.EPERM)})
	res, err := filter.Child{}.Probe(context.Background(), prog, []filter.Syscall{
		{Nr: unix.SYS_GETPID},
		{Nr: unix.SYS_GETPPID},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errno != unix.EPERM {
		t.Errorf("getpid under a program denying it: got %+v, want EPERM", res[0])
	}
	if res[1].Errno != 0 || int(res[1].R1) != os.Getpid() {
		t.Errorf("getppid under a program allowing it: got %+v, want success with this test's pid %d", res[1], os.Getpid())
	}
}

func TestDeniedMkdiratLeavesNoDirectory(t *testing.T) {
	filtertest.RequireSeccomp(t)
	dir := t.TempDir()
	mkdirat := func(name string) []filter.Syscall {
		return []filter.Syscall{{
			Nr:      unix.SYS_MKDIRAT,
			Args:    [6]uintptr{fd(unix.AT_FDCWD), 0, 0o755},
			Strings: map[int]string{1: filepath.Join(dir, name)},
		}}
	}
	ctx := context.Background()
	denied, err := filter.Child{}.Probe(ctx, program(t, rule{unix.SYS_MKDIRAT, errno(unix.EROFS)}), mkdirat("denied"))
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := filter.Child{}.Probe(ctx, program(t), mkdirat("allowed"))
	if err != nil {
		t.Fatal(err)
	}
	if denied[0].Errno != unix.EROFS {
		t.Errorf("denied mkdirat returned %+v, want EROFS", denied[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "denied")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("denied mkdirat: stat says %v, want no such directory", err)
	}
	if allowed[0].Errno != 0 {
		t.Errorf("allowed mkdirat returned %+v", allowed[0])
	}
	if st, err := os.Stat(filepath.Join(dir, "allowed")); err != nil || !st.IsDir() {
		t.Errorf("allowed mkdirat left no directory: %v", err)
	}
}

func TestVerdictDependsOnArguments(t *testing.T) {
	filtertest.RequireSeccomp(t)
	// Deny close(0xdead_00003039), comparing both halves of the argument.
	var b bpf.Builder
	allow, deny := b.NewLabel("allow"), b.NewLabel("deny")
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	b.JumpIf(bpf.JmpJeq, unix.SYS_CLOSE, bpf.Next, allow)
	b.Add(bpf.LoadAbs(bpf.ArgHigh(0)))
	b.JumpIf(bpf.JmpJeq, 0xdead, bpf.Next, allow)
	b.Add(bpf.LoadAbs(bpf.ArgLow(0)))
	b.JumpIf(bpf.JmpJeq, 12345, deny, allow)
	b.Bind(deny)
	b.Add(bpf.Ret(errno(unix.EPERM)))
	b.Bind(allow)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	prog, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel truncates close's argument to 32 bits, so every call
	// that runs finds no descriptor 12345 or 12352.
	want := map[uintptr]unix.Errno{
		0xdead_00003039: unix.EPERM,
		0x0000_00003039: unix.EBADF,
		0xbeef_00003039: unix.EBADF,
		0xdead_00003040: unix.EBADF,
	}
	var calls []filter.Syscall
	var args []uintptr
	for arg := range want {
		calls = append(calls, filter.Syscall{Nr: unix.SYS_CLOSE, Args: [6]uintptr{arg}})
		args = append(args, arg)
	}
	res, err := filter.Child{}.Probe(context.Background(), prog, calls)
	if err != nil {
		t.Fatal(err)
	}
	for i, arg := range args {
		if res[i].Errno != want[arg] {
			t.Errorf("close(%#x): got errno %d (%v), want %v", arg, res[i].Errno, res[i].Errno, want[arg])
		}
	}
}

// installRequest asks installRole to install a program.
type installRequest struct {
	Program []bpf.Instruction
	Flags   filter.Flags
}

// installReply tells what Install did in the child, and what
// /proc/self/status said before and after.
type installReply struct {
	Listener         int
	Err              string
	Errno            syscall.Errno
	NotSupported     bool
	NoNewPrivsBefore string
	NoNewPrivsAfter  string
	SeccompBefore    string
	SeccompAfter     string
}

func installRole(req, reply []byte) (int, error) {
	var r installRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return 0, err
	}
	var out installReply
	var err error
	if out.NoNewPrivsBefore, err = procStatus("NoNewPrivs"); err != nil {
		return 0, err
	}
	if out.SeccompBefore, err = procStatus("Seccomp"); err != nil {
		return 0, err
	}
	out.Listener, err = filter.Install(r.Program, r.Flags)
	if err != nil {
		out.Err = err.Error()
		errors.As(err, &out.Errno)
		out.NotSupported = errors.Is(err, filter.ErrNotSupported)
	}
	if out.NoNewPrivsAfter, err = procStatus("NoNewPrivs"); err != nil {
		return 0, err
	}
	if out.SeccompAfter, err = procStatus("Seccomp"); err != nil {
		return 0, err
	}
	return replyJSON(reply, out)
}

func runInstall(t *testing.T, c filter.Child, prog []bpf.Instruction, flags filter.Flags) installReply {
	t.Helper()
	b, err := c.Run(context.Background(), "filter_test.install", installRequest{prog, flags}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	var out installReply
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInstallSetsNoNewPrivs(t *testing.T) {
	filtertest.RequireSeccomp(t)
	if nnp, err := procStatus("NoNewPrivs"); err != nil {
		t.Fatal(err)
	} else if nnp != "0" {
		t.Skipf("SKIPPED: this test already runs with no_new_privs (NoNewPrivs: %s), which its children inherit: cannot see Install set it", nnp)
	}
	out := runInstall(t, filter.Child{}, program(t), filter.FlagTSync)
	if out.Err != "" {
		t.Fatal(out.Err)
	}
	if out.NoNewPrivsBefore != "0" || out.NoNewPrivsAfter != "1" {
		t.Errorf("NoNewPrivs went from %s to %s, want 0 to 1", out.NoNewPrivsBefore, out.NoNewPrivsAfter)
	}
	if out.SeccompAfter != "2" {
		t.Errorf("after Install, Seccomp: %s, want 2 (filter mode)", out.SeccompAfter)
	}
	if out.Listener != -1 {
		t.Errorf("listener %d without NEW_LISTENER, want -1", out.Listener)
	}
}

func TestInstallRejects(t *testing.T) {
	filtertest.RequireSeccomp(t)
	allow := []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ALLOW)}
	long := make([]bpf.Instruction, bpf.MaxInstructions+1)
	for i := range long {
		long[i] = bpf.Ret(unix.SECCOMP_RET_ALLOW)
	}
	for _, tc := range []struct {
		name  string
		prog  []bpf.Instruction
		flags filter.Flags
	}{
		{"empty program", nil, filter.FlagTSync},
		{"no return at the end", []bpf.Instruction{bpf.LoadAbs(bpf.OffsetNr)}, filter.FlagTSync},
		{"jump past the end", []bpf.Instruction{bpf.Jump(bpf.JmpJeq, 0, 5, 0), bpf.Ret(unix.SECCOMP_RET_ALLOW)}, 0},
		{"load past seccomp_data", []bpf.Instruction{bpf.LoadAbs(bpf.SeccompDataSize), bpf.Ret(unix.SECCOMP_RET_ALLOW)}, 0},
		{"unaligned load", []bpf.Instruction{bpf.LoadAbs(2), bpf.Ret(unix.SECCOMP_RET_ALLOW)}, 0},
		{"too long", long, 0},
		{"NEW_LISTENER with TSYNC but no TSYNC_ESRCH", allow, filter.FlagNewListener | filter.FlagTSync},
		{"WAIT_KILLABLE_RECV without NEW_LISTENER", allow, filter.FlagWaitKillableRecv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runInstall(t, filter.Child{}, tc.prog, tc.flags)
			if out.Errno != unix.EINVAL || out.NotSupported {
				t.Errorf("Install: %q, want an error wrapping EINVAL, not ErrNotSupported", out.Err)
			}
			if out.SeccompAfter != out.SeccompBefore {
				t.Errorf("failed Install changed Seccomp: %s to %s", out.SeccompBefore, out.SeccompAfter)
			}
			t.Log(out.Err)
		})
	}
}

func TestInstallReturnsListener(t *testing.T) {
	filtertest.RequireSeccomp(t)
	allow := []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ALLOW)}
	for _, flags := range []filter.Flags{
		filter.FlagNewListener,
		filter.FlagNewListener | filter.FlagTSync | filter.FlagTSyncESRCH,
	} {
		t.Run(flags.String(), func(t *testing.T) {
			if err := filter.FlagsSupported(flags); errors.Is(err, filter.ErrNotSupported) {
				t.Skipf("SKIPPED: %v", err)
			}
			out := runInstall(t, filter.Child{}, allow, flags)
			if out.Err != "" {
				t.Fatal(out.Err)
			}
			// 0, 1 and 2 are the child's standard streams, 3 its reply.
			if out.Listener <= 3 {
				t.Errorf("listener %d, want a new descriptor", out.Listener)
			}
		})
	}
}

// tsyncReply tells which threads a filter reached.
type tsyncReply struct {
	MainTid, ThreadTid         int
	MainErrno, ThreadErrno     syscall.Errno
	ThreadTidAfterInstallation int
}

// tsyncRole starts a thread, then installs a program denying getpid with
// the flags of the request, and has both threads call getpid.
func tsyncRole(req, reply []byte) (int, error) {
	var flags filter.Flags
	if err := json.Unmarshal(req, &flags); err != nil {
		return 0, err
	}
	type report struct {
		tid   int
		errno syscall.Errno
	}
	started, proceed, done := make(chan int), make(chan struct{}), make(chan report)
	go func() {
		// Keep the goroutine on the thread that existed before the
		// filter; the thread ends with it.
		runtime.LockOSThread()
		started <- unix.Gettid()
		<-proceed
		_, _, e := unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
		done <- report{unix.Gettid(), e}
	}()
	out := tsyncReply{ThreadTid: <-started, MainTid: unix.Gettid()}
	prog := []bpf.Instruction{
		bpf.LoadAbs(bpf.OffsetNr),
		bpf.Jump(bpf.JmpJeq, unix.SYS_GETPID, 0, 1),
		bpf.Ret(errno(unix.EPERM)),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
	}
	if _, err := filter.Install(prog, flags); err != nil {
		return 0, err
	}
	close(proceed)
	r := <-done
	out.ThreadTidAfterInstallation, out.ThreadErrno = r.tid, r.errno
	_, _, out.MainErrno = unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	return replyJSON(reply, out)
}

func TestTSyncFiltersEarlierThreads(t *testing.T) {
	filtertest.RequireSeccomp(t)
	for _, tc := range []struct {
		flags      filter.Flags
		threadWant syscall.Errno
	}{
		{filter.FlagTSync, unix.EPERM},
		{0, 0},
	} {
		t.Run(tc.flags.String(), func(t *testing.T) {
			b, err := filter.Child{}.Run(context.Background(), "filter_test.tsync", tc.flags, 4096)
			if err != nil {
				t.Fatal(err)
			}
			var out tsyncReply
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if out.MainTid == out.ThreadTid || out.ThreadTid != out.ThreadTidAfterInstallation {
				t.Fatalf("threads: main %d, other %d then %d: want two distinct threads, the other one stable", out.MainTid, out.ThreadTid, out.ThreadTidAfterInstallation)
			}
			if out.MainErrno != unix.EPERM {
				t.Errorf("installing thread: getpid errno %d, want EPERM", out.MainErrno)
			}
			if out.ThreadErrno != tc.threadWant {
				t.Errorf("thread started before Install: getpid errno %d, want %d", out.ThreadErrno, tc.threadWant)
			}
		})
	}
}

// TestUnprivileged runs a filtered child as nobody: the kernel accepts its
// filter only because Install sets no_new_privs.
func TestUnprivileged(t *testing.T) {
	filtertest.RequireSeccomp(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: switching the child to nobody needs root; as an unprivileged user every other test of this package already is this test")
	}
	const nobody = 65534
	c := filter.Child{
		Path:        copyForNobody(t),
		SysProcAttr: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}},
	}
	prog := program(t, rule{unix.SYS_GETPID, errno(unix.EPERM)})
	res, err := c.Probe(context.Background(), prog, []filter.Syscall{{Nr: unix.SYS_GETEUID}, {Nr: unix.SYS_GETPID}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Errno != 0 || res[0].R1 != nobody {
		t.Fatalf("geteuid in the child: %+v, want %d: the child is not unprivileged", res[0], nobody)
	}
	if res[1].Errno != unix.EPERM {
		t.Errorf("getpid under a program denying it, unprivileged: %+v, want EPERM", res[1])
	}
}

// copyForNobody copies the test binary where nobody can run it: the go
// tool builds it in a directory only root may enter.
func copyForNobody(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "filter-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, "filter.test")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
