//go:build linux

package trace

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Start starts cmd traced from its first instruction: the child stops
// after its execve (it runs under ptrace until then, which makes the kernel
// stop it there), is added to the traced tasks, and is let go without
// ptrace. Nothing of syscell's own runs in the child once the command's
// image is in place, and nothing of the command runs untraced. The caller
// waits for cmd as usual.
func (t *Tracer) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	return osThread(func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		pid := cmd.Process.Pid
		if err := waitExecStop(pid); err != nil {
			cmd.Process.Kill()
			return err
		}
		if err := t.Trace(pid); err != nil {
			cmd.Process.Kill()
			return err
		}
		if err := unix.PtraceDetach(pid); err != nil {
			cmd.Process.Kill()
			return fmt.Errorf("trace: let %s go: %w", cmd.Path, err)
		}
		return nil
	})
}

// waitExecStop waits for the SIGTRAP stop that ends a traced execve.
func waitExecStop(pid int) error {
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return fmt.Errorf("trace: wait for process %d to execute: %w", pid, err)
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return fmt.Errorf("trace: process %d did not stop after execve (status %#x)", pid, uint32(ws))
	}
	return nil
}

// osThread pins the calling goroutine to its thread for f: ptrace requests
// must come from the thread that became the tracer.
func osThread(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return f()
}
