package enforce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compile"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce/shim"
)

// Command is what Run runs.
type Command struct {
	// Path is the executable, as execve(2) takes it.
	Path string
	// Args are its arguments, Args[0] included.
	Args []string
	// Env is its environment; nil means the caller's.
	Env []string
	// Stdin, Stdout and Stderr are its standard streams; nil means
	// /dev/null. Files are handed over as they are; for anything else a
	// pipe is made, as package os/exec does.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Options tune Run. The zero value enforces the policy with the running
// binary as the shim.
type Options struct {
	Mode Mode
	// Shim is the binary that installs the filter and executes the
	// command: when empty, ShimName next to os.Executable() where there
	// is one, else os.Executable() itself. It must call MaybeRunShim (or
	// shim.MaybeRun) first thing in main.
	Shim string
	// SysProcAttr is given to the shim, and so to the command: a
	// Credential runs both unprivileged.
	SysProcAttr *syscall.SysProcAttr
	// Signals are forwarded to the command while it runs.
	Signals <-chan os.Signal
	// DenialLog, if not nil, gets every call the policy stopped.
	DenialLog *DenialLog
}

// Result is how the command ended and what the supervisor saw.
type Result struct {
	// ExitCode is the command's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal is the signal that ended the command, if one did. SIGSYS is
	// what the kernel's kill-process action looks like, and what an
	// unhandled trap does.
	Signal syscall.Signal
	// Calls are the calls the policy stops, sorted by ABI, then name: all
	// of them but those the kernel kills for, which it does unseen.
	Calls []Call
	// KilledFor is the call for which the supervisor killed the command,
	// a notified call the policy kills or traps on.
	KilledFor *Call
	// First is the first call the policy stopped, if any did.
	First *Denial
}

// Run runs cmd under the policy r in the given mode and returns how it
// ended. The returned error is about Run; the command's failure is in the
// Result. When Run returns an error before the command could start, the
// command has not run a single instruction. Cancelling ctx kills the
// command.
//
// r must cover x86_64. Its actions are used as they are: apply Override
// first to change how denied calls are stopped.
func Run(ctx context.Context, r *policy.Resolved, cmd Command, opt Options) (*Result, error) {
	if len(cmd.Args) == 0 {
		return nil, errors.New("enforce: no arguments, not even the command's name")
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	// The shim takes a while to start (a millisecond for the Go shim,
	// this binary again): it starts while the filter compiles, and runs
	// nothing of the command before it has the filter; without one, it
	// is killed.
	s, err := startShim(cmd, opt)
	if err != nil {
		return nil, err
	}
	p, err := newPlan(r, opt.Mode)
	if err != nil {
		return nil, s.cancel(err)
	}
	prog, err := compile.Compile(p.kernel, compile.Options{})
	if err != nil {
		return nil, s.cancel(fmt.Errorf("enforce: compile %s: %w", r.Source, err))
	}
	if err := s.request(shim.Request{Program: bpf.Encode(prog), Path: cmd.Path, Args: cmd.Args, Env: env, Listen: true}); err != nil {
		return nil, err
	}
	l, err := s.listener()
	if err != nil {
		return nil, s.abort(err)
	}
	sup := newSupervisor(l, p.decide, opt.Mode, s.proc.Process.Pid, opt.DenialLog)
	go sup.serve()
	if err := s.started(); err != nil {
		sup.stop()
		return nil, s.abort(err)
	}
	state, err := s.wait(ctx, opt.Signals)
	sup.stop()
	if state == nil {
		return nil, err
	}
	res := &Result{ExitCode: state.ExitCode(), Calls: sup.calls(), KilledFor: sup.killedFor, First: sup.first}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal()
	}
	if sup.err != nil {
		err = errors.Join(err, sup.err)
	}
	return res, err
}
