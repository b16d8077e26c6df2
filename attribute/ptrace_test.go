package attribute_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/fixtures"
	"github.com/syscell/syscell/syscalls"
	"github.com/syscell/syscell/unwind"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.Remove()
	os.Exit(code)
}

// call is one system call and where the rule put it.
type call struct {
	name  string
	owner string // object path, "[runtime]" or "[start-up]"
	err   error
}

// ptraceCalls runs argv under ptrace, stopping at every system call entry
// of its main thread, and applies the rule to each from the live process:
// /proc/PID/maps and process_vm_readv, the way a supervisor would.
func ptraceCalls(t *testing.T, argv ...string) []call {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESYSGOOD|unix.PTRACE_O_EXITKILL); err != nil {
		t.Fatal(err)
	}
	objs := attribute.NewObjects(attribute.DefaultRuntime())
	defer objs.Close()
	var calls []call
	entering := true
	for {
		if err := unix.PtraceSyscall(pid, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		if ws.Exited() || ws.Signaled() {
			return calls
		}
		if ws.StopSignal() != unix.SIGTRAP|0x80 {
			continue
		}
		if entering {
			calls = append(calls, attributeStopped(t, pid, objs))
		}
		entering = !entering
	}
}

// attributeStopped applies the rule to the process stopped at a system
// call entry.
func attributeStopped(t *testing.T, pid int, objs *attribute.Objects) call {
	var pr unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &pr); err != nil {
		t.Fatal(err)
	}
	regs := unwind.Regs{unwind.RAX: pr.Rax, unwind.RDX: pr.Rdx, unwind.RCX: pr.Rcx, unwind.RBX: pr.Rbx,
		unwind.RSI: pr.Rsi, unwind.RDI: pr.Rdi, unwind.RBP: pr.Rbp, unwind.RSP: pr.Rsp,
		unwind.R8: pr.R8, unwind.R9: pr.R9, unwind.R10: pr.R10, unwind.R11: pr.R11,
		unwind.R12: pr.R12, unwind.R13: pr.R13, unwind.R14: pr.R14, unwind.R15: pr.R15, unwind.RA: pr.Rip}
	name, ok := syscalls.Name(syscalls.X86_64, uint32(pr.Orig_rax))
	if !ok {
		name = fmt.Sprint(pr.Orig_rax)
	}
	space, err := attribute.ReadSpace(pid, objs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := attribute.Attribute(space, uint32(pr.Orig_rax), &regs, attribute.ProcessMemory{Pid: pid})
	if err != nil {
		return call{name: name, err: err}
	}
	switch {
	case res.StartUp:
		return call{name: name, owner: "[start-up]"}
	case res.Object == nil:
		return call{name: name, owner: "[runtime]"}
	}
	return call{name: name, owner: filepath.Base(res.Object.Path)}
}

// TestPtraceModes applies the rule to every system call of prog's
// single-process modes, from the live process, and checks each owner's
// calls against the fixtures' expectations.
func TestPtraceModes(t *testing.T) {
	dir := fixtures.Require(t)
	want, err := fixtures.Expectations()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"getpid", "origin", "printf", "tailcall", "inline", "syscall", "main", "dlopen", "jit"} {
		t.Run(mode, func(t *testing.T) {
			got := map[string][]string{}
			for _, c := range ptraceCalls(t, fixtures.Args(dir, mode)...) {
				if c.err != nil {
					t.Errorf("%s: %v", c.name, c.err)
					continue
				}
				if !slices.Contains(got[c.owner], c.name) {
					got[c.owner] = append(got[c.owner], c.name)
				}
			}
			for _, p := range want[mode].Compare(got) {
				t.Error(p)
			}
		})
	}
}
