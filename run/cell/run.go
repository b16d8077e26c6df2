package cell

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/compile"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell/snapshot"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// How long the start may take: the loader greets at once; loading every
// object of a large program takes longer.
const (
	helloTimeout = 10 * time.Second
	startTimeout = 60 * time.Second
)

// Options tune Run.
type Options struct {
	// Library is the audit library, LibraryPath(os.Executable()) when
	// empty. For Supervise, it is the library as the program names it
	// (its LD_AUDIT), under Root.
	Library string
	// Root is the root directory of a program Supervise serves, as the
	// supervisor reaches it (/proc/PID/root): compartments' paths are
	// found under it, as the program's loader finds them.
	Root string
	// SysProcAttr is given to the program: a Credential runs it
	// unprivileged.
	SysProcAttr *syscall.SysProcAttr
	// Signals are forwarded to the program while it runs.
	Signals <-chan os.Signal
	// Mode is what happens to the calls the policy stops: enforce (the
	// zero Mode), audit or complain, as for a whole-process policy.
	Mode enforce.Mode
	// DenialLog, if not nil, gets every call the policy stopped.
	DenialLog *enforce.DenialLog
	// Exec is what happens to an exec of a program the policy does not
	// let its caller start with its own compartments (execs.go).
	Exec ExecRule
	// CountKernel counts the calls the kernel lets run (Result.Kernel),
	// which needs root.
	CountKernel bool
	// DenyProcMem refuses every open of a process's /proc/PID/mem for
	// writing, through which the kernel may let code rewrite sealed
	// code (ProcMemWrites): each open for writing is then supervised.
	DenyProcMem bool
	// CallersIn is where the supervisor finds the threads whose callers
	// it looks for (Result.Callers).
	CallersIn CallersIn
}

// CallersIn is where the supervisor finds the threads whose callers it
// looks for.
type CallersIn int

const (
	// CallersAnywhere: in /proc and their memory, and in the kernel's
	// snapshots (as root) once loaded, in the background, after many
	// (snapshots.go).
	CallersAnywhere CallersIn = iota
	// CallersInProc: in /proc alone, the way without root.
	CallersInProc
	// CallersInSnapshots: in the kernel's snapshots from the start,
	// which Run fails without.
	CallersInSnapshots
)

// Result is how the program ended and what the supervisor saw.
type Result struct {
	// ExitCode is the program's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal is the signal that ended the program, if one did.
	Signal syscall.Signal
	// Start is what the audit library reported at start.
	Start *Start
	// Supervised counts the calls the supervisor decided, and Latency is
	// how long it took for them.
	Supervised []Supervised
	Latency    Latency
	// Denied counts the calls the policy stopped: every one but those
	// the kernel kills for.
	Denied []Denied
	// FirstDenied is the first call the policy stopped, if any was.
	FirstDenied *enforce.Denial
	// Kernel counts the calls the kernel let run, with
	// Options.CountKernel; KernelErr is why they could not be counted.
	Kernel    []KernelCalls
	KernelErr error
	// Callers counts where the supervisor found the callers it looked
	// for.
	Callers Callers
	// Phased says the policy narrows compartments once their processes
	// serve; Served counts the processes the supervisor knew to serve:
	// marked at their first serving call, or born of a serving process.
	Phased bool
	Served int
}

// Callers counts where the supervisor found the threads whose callers it
// looked for: in the snapshots the kernel took (as root), or in /proc and
// their memory (without root, or when a thread had not been switched out
// yet).
type Callers struct {
	Snapshots uint64 `json:"snapshots"`
	Proc      uint64 `json:"proc"`
}

// Run runs cmd with the per-library filter of p: each compartment of p
// may make its own system calls, and the rules of p bound them all. It
// returns how the program ended; the returned error is about Run. When
// Run fails before the filter is installed, the program has run none of
// its own code. Cancelling ctx kills the program.
func Run(ctx context.Context, p *policy.Policy, cmd enforce.Command, opt Options) (*Result, error) {
	if len(p.Compartments) == 0 {
		return nil, errors.New("cell: the policy has no compartments")
	}
	if len(cmd.Args) == 0 {
		return nil, errors.New("cell: no arguments, not even the command's name")
	}
	// The audit library is checked while the compartments are
	// prepared: reading its symbols is a tenth of a millisecond of every
	// start. Its errors come first, as they would one after the other.
	type found struct {
		path string
		err  error
	}
	audit := make(chan found, 1)
	go func() {
		path, err := library(opt.Library)
		audit <- found{path, err}
	}()
	cfg, err := prepare(p, cmd.Path)
	lib := <-audit
	if lib.err != nil {
		return nil, lib.err
	}
	if err != nil {
		return nil, err
	}
	prog, ch, err := startProgram(cmd, opt, lib.path, cfg.inheritRoom())
	if err != nil {
		return nil, err
	}
	sup, start, err := handshake(ch, p, cfg, opt, lib.path, prog.Process.Pid)
	ch.conn.Close()
	if err != nil {
		prog.Process.Kill()
		prog.Wait()
		return nil, startFailure(err, prog.ProcessState)
	}
	go sup.serve()
	state, err := wait(ctx, prog, opt.Signals)
	sup.stop()
	res := sup.result(start)
	res.ExitCode = state.ExitCode()
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal()
		}
	}
	return res, errors.Join(err, sup.err)
}

// result is what the supervisor saw of the program.
func (s *supervisor) result(start *Start) *Result {
	res := &Result{Start: start, Supervised: s.stats.list(), Latency: s.stats.summary(),
		Denied: s.denied.list(), FirstDenied: s.first, KernelErr: s.counterErr,
		Callers: Callers{Snapshots: s.fromSnapshots.Load(), Proc: s.fromProc.Load()}, Phased: s.phased, Served: s.served}
	if s.counter != nil {
		res.Kernel, res.KernelErr = s.counter.stop()
	}
	return res
}

// library finds the audit library, and checks that it is one: the
// loader ignores an LD_AUDIT object it cannot use, and runs the program
// without it.
func library(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("cell: find the audit library: %w", err)
		}
		path = LibraryPath(exe)
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("cell: the audit library: %w (make build puts it next to syscell)", err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return "", fmt.Errorf("cell: the audit library %s: %w", path, err)
	}
	for _, want := range []string{"la_version", "la_objopen", "la_activity", "la_symbind64"} {
		if !slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == want && s.Section != elf.SHN_UNDEF }) {
			return "", fmt.Errorf("cell: %s is no audit library: it does not define %s", path, want)
		}
	}
	return path, nil
}

// prepare checks that the loader will load the audit library into path
// and makes the library's configuration for the compartments of p.
func prepare(p *policy.Policy, path string) (config, error) {
	if err := checkExecutable(path); err != nil {
		return config{}, err
	}
	ids, err := newIdentities(p)
	if err != nil {
		return config{}, err
	}
	return newConfig(p, ids)
}

// newConfig is what the audit library is sent for the compartments of
// p, which ids name.
func newConfig(p *policy.Policy, ids *identities) (config, error) {
	stubs, err := callerDependent(p, ids)
	if err != nil {
		return config{}, err
	}
	return config{ids: ids, runtime: runtimeNames(), stubs: stubs, serving: servingNumbers(p)}, nil
}

// callerDependent lists the system calls whose verdict depends on the
// caller: the calls some compartments may make and others may not.
func callerDependent(p *policy.Policy, ids *identities) ([]uint32, error) {
	spec, err := compartment.NewSpec(p, compartment.Layout{Window: windowLow, SlotShift: minSlotShift, Slots: ids.names})
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	var out []uint32
	for _, nr := range spec.Union.Numbers() {
		if nr < syscalls.X32Bit && spec.Coverage(nr) == compartment.Some {
			out = append(out, nr)
		}
	}
	return out, nil
}

// startProgram starts the program with the audit library, and the
// socket to it.
func startProgram(cmd enforce.Command, opt Options, lib string, inherit int) (*exec.Cmd, *channel, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cell: socket to the audit library: %w", err)
	}
	ours, peer := os.NewFile(uintptr(fds[0]), "syscell-cell"), os.NewFile(uintptr(fds[1]), "syscell-cell-audit")
	defer peer.Close()
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("cell: socket to the audit library: %w", err)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	c := exec.Command(cmd.Path)
	c.Args, c.Env = cmd.Args, programEnv(env, lib, inheritedChannel, inherit)
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.ExtraFiles = []*os.File{peer}
	c.SysProcAttr = opt.SysProcAttr
	if err := c.Start(); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("cell: start %s: %w", cmd.Path, err)
	}
	return c, newChannel(conn.(*net.UnixConn)), nil
}

// handshake tells the audit library of process pid where its window
// goes, compiles the filter for the layout it reports, sends it, and
// takes the listener. On a failure the program is still at its start, or
// has exited.
func handshake(ch *channel, p *policy.Policy, cfg config, opt Options, lib string, pid int) (*supervisor, *Start, error) {
	ch.conn.SetDeadline(time.Now().Add(helloTimeout))
	block, err := ch.hello()
	if err != nil {
		return nil, nil, startError(err)
	}
	ch.conn.SetDeadline(time.Now().Add(startTimeout))
	ids := cfg.ids
	win, err := chooseWindow(rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), len(ids.names), block)
	if err != nil {
		return nil, nil, err
	}
	cfg.window = win
	if err := ch.sendConfig(cfg); err != nil {
		return nil, nil, startError(err)
	}
	start, err := ch.start(win, ids)
	if err != nil {
		return nil, nil, startError(err)
	}
	compiling := time.Now()
	spec, err := compartment.NewSpec(p, start.Layout)
	var prog []bpf.Instruction
	if err == nil {
		ks := kernelSpec(spec, opt.Mode)
		if opt.DenyProcMem {
			ks.Union = notifyWriteOpens(ks.Union)
		}
		prog, err = compile.Compartments(ks)
	}
	start.Instructions, start.CompileTime = len(prog), time.Since(compiling)
	if err != nil {
		err = fmt.Errorf("cell: compile the filter: %w", err)
		return nil, nil, errors.Join(err, ch.sendFail(err))
	}
	// Counting starts before the program runs under its filter, so that
	// it sees every call that filter lets run.
	var counter *kernelCounter
	var counterErr error
	if opt.CountKernel {
		counter, counterErr = countKernel(pid, start.Layout)
	}
	var snaps *snapshot.Snapshots
	if opt.CallersIn == CallersInSnapshots {
		if snaps, err = snapshot.Load(start.Epoch); err == nil {
			err = snaps.Watch(pid)
		}
	}
	var l *notify.Listener
	if err == nil {
		l, err = listen(ch, prog)
	}
	if err != nil {
		if counter != nil {
			counter.stop()
		}
		if snaps != nil {
			snaps.Close()
		}
		return nil, nil, err
	}
	sup := newSupervisor(l, spec, opt, lib, ids, win, start.Epoch)
	sup.inherit, sup.execs, sup.sealed, sup.ringOps = start.Inherit, grantsOf(p), start.Unsealed == 0, ringOps(p)
	sup.denyProcMem, sup.phased = opt.DenyProcMem, phased(p)
	sup.started, sup.reported = pid, reportedRanges(start.Layout)
	sup.counter, sup.counterErr = counter, counterErr
	sup.snapshots = opt.CallersIn != CallersInProc
	sup.snaps.Store(snaps)
	return sup, start, nil
}

// listen has the audit library install the program, and listens to its
// notifications.
func listen(ch *channel, prog []bpf.Instruction) (*notify.Listener, error) {
	fd, err := installFilter(ch, prog)
	if err != nil {
		return nil, err
	}
	return notify.NewListener(fd)
}

// installFilter sends the program to the audit library, which installs
// it, and returns the listener its helper hands over.
func installFilter(ch *channel, prog []bpf.Instruction) (int, error) {
	if err := ch.sendProgram(prog); err != nil {
		return -1, startError(err)
	}
	helper, fd, err := ch.handoff()
	if helper > 0 {
		// The helper, the launcher's child, exits once it has sent the
		// listener, or failed to. A helper of a program that connected
		// to a supervisor is the program's (pid 0).
		go unix.Wait4(helper, nil, 0, nil)
	}
	if err != nil {
		return -1, startError(err)
	}
	return fd, nil
}

func startError(err error) error {
	return fmt.Errorf("cell: the program did not start under its filter: %w", err)
}

// exitUnfiltered is the status the audit library exits with when it
// cannot put the program under its filter (audit/fail.c).
const exitUnfiltered = 126

// startFailure explains a failed start by how the program ended. Killing
// a program that closed the socket by ending does not change its status.
func startFailure(err error, state *os.ProcessState) error {
	if !errors.Is(err, errClosed) || state == nil {
		return err
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled() && ws.Signal() != syscall.SIGKILL:
		return fmt.Errorf("%w: the program was killed by %v while the loader ran", err, ws.Signal())
	case ok && ws.Exited() && ws.ExitStatus() == exitUnfiltered:
		return fmt.Errorf("%w (the reason is on the program's standard error)", err)
	}
	return err
}

// runtimeNames are the sonames of the system runtime, sorted.
func runtimeNames() []string {
	var names []string
	for name := range attribute.DefaultRuntime() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// wait waits for the program to exit, forwarding signals to it, and kills
// it when ctx is done. It learns of the exit from a pidfd before it
// reaps: the supervisor stops threads with ptrace (readRegisters), and
// a wait for the program's process would take a stop of its main thread
// for its end.
func wait(ctx context.Context, c *exec.Cmd, signals <-chan os.Signal) (*os.ProcessState, error) {
	pidfd, err := unix.PidfdOpen(c.Process.Pid, 0)
	if err != nil {
		c.Process.Kill()
		c.Wait()
		return c.ProcessState, fmt.Errorf("cell: pidfd of the program: %w", err)
	}
	defer unix.Close(pidfd)
	exited := make(chan struct{})
	go func() {
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(exited)
	}()
	done := ctx.Done()
	for {
		select {
		case <-exited:
			err := c.Wait()
			var exitErr *exec.ExitError
			if err != nil && !errors.As(err, &exitErr) {
				return c.ProcessState, fmt.Errorf("cell: wait for the program: %w", err)
			}
			return c.ProcessState, context.Cause(ctx)
		case sig := <-signals:
			c.Process.Signal(sig)
		case <-done:
			c.Process.Kill()
			done = nil
		}
	}
}
