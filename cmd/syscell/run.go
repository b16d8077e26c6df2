package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/heapguard"
	"github.com/syscell/syscell/infer"
	"github.com/syscell/syscell/policies"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

type runCmd struct {
	policyFlags
	arch      archFlag
	policy    string
	mode      string
	action    string
	report    string
	heapGuard string // the guard's mode, "" without it
	stats     bool
	// wholeProcess runs a policy with compartments as its rules alone.
	wholeProcess bool
	// quiet drops the summary of denied calls; logDenials names the file
	// that gets each.
	quiet      bool
	logDenials string
	// exec is what an exec the policy does not grant gets (cell.ExecRule).
	exec string
	// strict refuses a policy whose compartments name stale objects, or
	// that assumes vDSO functions this kernel lacks.
	strict bool
	// denyProcMem refuses opens of /proc/PID/mem for writing.
	denyProcMem bool
	// widen is the part of CMD's inferred calls the policy is widened
	// with ("" for none).
	widen string
	cache cacheFlags
}

func runCommand() *cobra.Command {
	var c runCmd
	cmd := &cobra.Command{
		Use:   "run --policy POLICY [flags] -- CMD [ARGS...]",
		Short: "Run a command under a policy",
		Long: `Run CMD under the program compiled from a policy. The filter is in place
before CMD's first instruction and binds every thread and process CMD
creates; it needs no privilege. CMD's exit status is syscell's; a CMD that
a signal killed exits with 128 plus the signal's number, and syscell says
which signal (SIGSYS is how seccomp's kill-process and trap actions kill).

POLICY is a file (syscell TOML or OCI JSON) or a bundled policy:
runtime-default (Docker's default profile) or deny-dangerous (everything but
the high-threat calls of syscell's ranking, io_uring, bpf, ptrace and kernel
module and kexec calls, which fail with EPERM). A bad policy is reported as
FILE:LINE and CMD is not started; nor is it when the filter cannot be
installed.

--mode enforce (the default) gives denied calls the policy's actions.
--mode audit denies nothing: every call the policy would deny runs, and is
reported once at exit with its count and the instruction pointer of its
first call. --mode complain reports the same calls and fails them: with
the policy's errno, or EPERM where the policy would kill or trap. Audit and
complain are supervised by syscell through seccomp user notification; if
syscell dies, the calls they would report fail with ENOSYS.

--action replaces the action of every denied call: kill (kill-process),
errno (EPERM) or trap.

CMD gets syscell's standard streams and environment, and no other
descriptor. Terminal interrupts (SIGINT, SIGQUIT) reach CMD directly;
SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to syscell are passed on.

A policy with compartments (per-library allowlists, as syscell record
writes them) runs CMD with a per-library filter instead: each library's
calls are decided by its own compartment, in the kernel where they come
from the library's code or from the syscall stubs syscell gives its
bindings of libc's wrappers, and by syscell itself where they come from
libc's code (stdio, for one), whose callers it finds by unwinding the
stack; the rules bound them all. CMD must be dynamically linked and not
set-user-ID; the filter is installed once its libraries are loaded, before
any of their code runs. --stats lists at exit the calls syscell decided.
If syscell dies, those calls fail with ENOSYS. --mode audit and complain
work as for any policy; their report names who made each call.
--whole-process ignores the
compartments and enforces the rules alone, their union, as one filter:
the baseline compartments are measured against.

In enforce mode, syscell says at exit on its standard error how many calls
the policy denied and which was the first (syscall, compartment,
instruction pointer), unless -q; --log-denials FILE writes one JSON line
per denied call (time, thread, syscall, arguments, compartment, action).
A call of the kernel's kill action is seen only as CMD's death by SIGSYS.

With compartments, a program CMD executes runs with the compartments the
policy has for it only if the compartment that executes it may start it
(exec = [...] in that [[compartment]], which syscell record writes for
every exec it saw); any other program runs bounded by the calls of the
compartment that started it (--exec bound, the default: an exec never
widens what its caller may do), or the exec fails with EPERM (--exec
deny). An exec whose environment dropped syscell's variables (env -i)
gets them back.

With compartments, every library's code is sealed once loaded (mseal):
no library can make another's code writable or map over it. The kernel
may still let a process write its own code through /proc/PID/mem (its
boot parameter proc_mem.force_override says whether); syscell says so at
start where the policy lets code open files for writing, and
--deny-proc-mem refuses every open of a mem file for writing, at the cost
of a supervised call for each open for writing. An io_uring ring may be
set up only by a compartment that may call io_uring_setup and only where
the policy names the operations rings may make (io_uring = [...]): every
ring of the process may make those, and no other, whichever library
writes its queue. --stats also says whether the CPU has protection keys
and shadow stacks. What an attacker inside a library can and cannot do:
docs/THREAT-MODEL.md.
Whatever the policy says, CMD may always exit, abort (SIGABRT to itself)
and write to its standard error: a denial never turns an orderly exit
into a crash.

--widen widens the policy, before it is enforced, with what syscell infer
finds CMD's objects can do: --widen static (or static:all) adds to each
compartment every call inferred for it (recorded ∪ inferred), --widen
static:exit only the calls of the paths that end the program (what its
calls of exit, abort, assertion failures and err can make: flushing
stdio, exit handlers, a last message), so that a run that takes an error
path the recording never saw still ends as it should. A policy without
compartments gets the union. Compartments match by path and build-id.

--heap-guard preloads syscell's use-after-free guard into CMD (LD_PRELOAD):
every use of freed heap memory then faults with a report naming the
allocation and free sites. --heap-guard=deferred is the mode a server can
afford: no address is ever handed out twice, and freed memory faults once
every object around it is dead and a bounded batch of such memory is full.
The guard's own syscalls are allowed whatever the policy says of them.`,
		Example: `  syscell run --policy runtime-default -- /bin/true
  syscell run --policy my.toml --mode audit --report calls.json -- ./server
  syscell run --policy docker.json --caps '' --action kill -- sh -c 'mount -t tmpfs x /mnt'
  syscell record -o recorded.toml -- ./server && syscell run --policy recorded.toml --stats -- ./server`,
		Args: needCommand,
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) },
	}
	c.policyFlags.register(cmd)
	c.arch.register(cmd)
	fs := cmd.Flags()
	// Flags end at CMD, whose own flags are its business.
	fs.SetInterspersed(false)
	fs.StringVar(&c.policy, "policy", "", "the `POLICY` file, or the name of a bundled policy")
	fs.StringVar(&c.mode, "mode", "enforce", "enforce, audit or complain")
	fs.StringVar(&c.action, "action", "", "what every denied call gets: kill, errno or trap (default: the policy's actions)")
	fs.StringVar(&c.report, "report", "", "write the calls outside the policy and how CMD ended to `FILE`, as JSON")
	fs.StringVar(&c.heapGuard, "heap-guard", "", "preload the use-after-free guard, in `MODE` strict (the default) or deferred (its own syscalls are allowed)")
	fs.Lookup("heap-guard").NoOptDefVal = heapguard.Strict
	fs.BoolVar(&c.stats, "stats", false, "with compartments: list the calls the supervisor decided, at exit")
	fs.BoolVar(&c.wholeProcess, "whole-process", false, "enforce the rules alone, as one filter for the whole process, ignoring the compartments")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "do not summarize denied calls at exit")
	fs.StringVar(&c.logDenials, "log-denials", "", "write each denied call to `FILE`, one JSON object a line")
	fs.BoolVar(&c.strict, "strict", false, "refuse a policy whose compartments name an object missing or of another build on disk, or that assumes vDSO functions this kernel lacks (default: warn)")
	fs.StringVar(&c.exec, "exec", "bound", "with compartments, an exec of a program the policy does not let its caller start: bound (by the caller's calls) or deny")
	fs.BoolVar(&c.denyProcMem, "deny-proc-mem", false, "with compartments, refuse every open of a process's /proc/PID/mem for writing (each open for writing is then supervised)")
	fs.StringVar(&c.widen, "widen", "", "widen the policy with CMD's inferred calls: static (all of them) or static:exit (those of the paths that end it)")
	c.cache.register(cmd)
	return cmd
}

// exitStatus is the status syscell exits with once CMD has run and
// everything about it has been said.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func (c *runCmd) run(cmd *cobra.Command, args []string) error {
	mode, err := enforce.ParseMode(c.mode)
	if err != nil {
		return inputErrorf("--mode: %w", err)
	}
	sigs := catchSignals()
	go probePidfd()
	p, r, err := c.resolve(cmd, args[0])
	if err != nil {
		return err
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return inputErrorf("%s: %w", args[0], errors.Unwrap(err))
	}
	if err := c.checkVDSO(cmd, p); err != nil {
		return err
	}
	if len(p.Compartments) > 0 && !c.wholeProcess {
		return c.runCompartments(cmd, args, path, p, mode, sigs)
	}
	if p.Phased() {
		warn(cmd, []string{c.policy + ": phases (serving-from) narrow compartments, which a whole-process filter has not: the rules hold in both phases"})
	}
	if c.stats {
		if c.wholeProcess {
			return inputErrorf("--stats: --whole-process enforces the rules alone, so no call is supervised")
		}
		return inputErrorf("--stats: the policy has no compartments, so no call is supervised")
	}
	out, err := c.createOutputs()
	if err != nil {
		return err
	}
	command := enforce.Command{Path: path, Args: args, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	if c.heapGuard != "" {
		if command.Env, err = heapGuardEnv(c.heapGuard); err != nil {
			out.discard()
			return err
		}
	}
	res, err := runSupervised(r, command, enforce.Options{Mode: mode, DenialLog: out.log}, sigs)
	if res == nil {
		out.discard()
		return err
	}
	// CMD ran: what happened to it is said even if supervising it failed.
	tell(cmd.ErrOrStderr(), mode, args[0], res)
	if mode == enforce.Enforce && !c.quiet {
		tellDenials(cmd.ErrOrStderr(), total(res.Calls, func(c enforce.Call) int { return c.Count }), res.First, c.logDenials)
	}
	if out.report != nil {
		err = errors.Join(err, writeJSONReport(out.report, newRunReport(mode, c.policy, args, res)))
	}
	if err = errors.Join(err, out.closeLog()); err != nil {
		return err
	}
	return exitStatusOf(res)
}

// total adds up the counts of calls.
func total[T any](calls []T, count func(T) int) int {
	n := 0
	for _, c := range calls {
		n += count(c)
	}
	return n
}

// tellDenials is the summary of the calls the policy denied.
func tellDenials(w io.Writer, n int, first *enforce.Denial, log string) {
	if n == 0 || first == nil {
		return
	}
	more := " (--log-denials FILE lists each)"
	if log != "" {
		more = " (each is in " + log + ")"
	}
	calls := "calls"
	if n == 1 {
		calls = "call"
	}
	fmt.Fprintf(w, "syscell: %d %s denied; first: %s%s\n", n, calls, first, more)
}

// runSupervised runs command, passing on the signals meant for it.
func runSupervised(r *policy.Resolved, command enforce.Command, opt enforce.Options, sigs *caughtSignals) (*enforce.Result, error) {
	opt.Signals = sigs.caught()
	return enforce.Run(context.Background(), r, command, opt)
}

// caughtSignals are the signals run catches while CMD runs: those it
// passes on, and terminal interrupts, which reach CMD directly, so that
// syscell only catches them (ignoring them would have CMD ignore them
// too).
type caughtSignals struct {
	forward, interrupts chan os.Signal
	ready               chan struct{}
}

// catchSignals catches them in the background: the runtime starts a
// thread of its own for the first handler and waits for it, which made
// every run's start wait; the policy loads meanwhile. They stay caught
// until syscell exits: giving them back their default actions takes
// that thread a round trip per signal (0.1–0.3 ms of every run's end),
// and a signal caught after CMD has ended is one syscell need not die of.
func catchSignals() *caughtSignals {
	s := &caughtSignals{forward: make(chan os.Signal, 1), interrupts: make(chan os.Signal, 1), ready: make(chan struct{})}
	go func() {
		signal.Notify(s.forward, unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2)
		signal.Notify(s.interrupts, unix.SIGINT, unix.SIGQUIT)
		close(s.ready)
	}()
	return s
}

// probePidfd has package os probe whether pidfds work, as it does once,
// with a child of its own, before it starts its first process: in the
// background, while the policy loads, instead of when CMD starts.
func probePidfd() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Release()
	}
}

// caught returns the signals to pass on to CMD once they are caught:
// CMD starts only then.
func (s *caughtSignals) caught() <-chan os.Signal {
	<-s.ready
	return s.forward
}

// exitStatusOf is syscell's exit status for how CMD ended: CMD's own, or
// 128 plus the number of the signal that killed it, as shells report it.
func exitStatusOf(res *enforce.Result) error {
	switch {
	case res.Signal != 0:
		return exitStatus(128 + int(res.Signal))
	case res.ExitCode != 0:
		return exitStatus(res.ExitCode)
	}
	return nil
}

// resolve loads --policy, a bundled policy or a file, widens it with
// --widen, applies --action and resolves it for --arch. It returns the
// policy as loaded and widened too: one with compartments runs as it is.
func (c *runCmd) resolve(cmd *cobra.Command, name string) (*policy.Policy, *policy.Resolved, error) {
	if c.policy == "" {
		return nil, nil, inputErrorf("missing --policy POLICY (a file, or one of %s)", strings.Join(policies.Names(), ", "))
	}
	override, ok := runActions[c.action]
	if !ok && c.action != "" {
		return nil, nil, inputErrorf("--action: unknown action %q (want kill, errno or trap)", c.action)
	}
	arches, err := c.arch.parse()
	if err != nil {
		return nil, nil, err
	}
	p, err := c.load(cmd, c.policy)
	if err != nil {
		return nil, nil, c.notBundled(err)
	}
	if c.widen != "" {
		if p, err = c.widened(p, name); err != nil {
			return nil, nil, err
		}
	}
	if c.heapGuard != "" && len(p.Compartments) == 0 {
		allowHeapGuard(p)
	}
	r := resolveFor(p, arches)
	if !slices.ContainsFunc(r.Tables, func(t *policy.Table) bool { return t.Arch == syscalls.X86_64 }) {
		return nil, nil, inputErrorf("--arch: run needs x86_64, the ABI through which CMD is started")
	}
	if ok {
		r = enforce.Override(r, override)
	}
	return p, r, nil
}

// widened is p widened with the part --widen names of what the program
// name can do.
func (c *runCmd) widened(p *policy.Policy, name string) (*policy.Policy, error) {
	part, err := infer.ParsePart(c.widen)
	if err != nil {
		return nil, inputErrorf("--widen: %w", err)
	}
	path, err := programPath(name)
	if err != nil {
		return nil, err
	}
	opt, err := c.cache.options()
	if err != nil {
		return nil, err
	}
	for _, program := range append([]string{path}, policyPrograms(p, path)...) {
		res, err := infer.Infer(program, opt)
		if err != nil {
			return nil, inferError(err)
		}
		p = infer.Widen(p, res, part)
	}
	return p, nil
}

// policyPrograms are the programs other than cmd whose compartments p
// has, on disk as recorded: those CMD executes, whose objects the
// inference of CMD alone does not see.
func policyPrograms(p *policy.Policy, cmd string) []string {
	var out []string
	for _, c := range p.Compartments {
		if c.Path == "" || c.Path == cmd || slices.Contains(out, c.Path) || !infer.IsProgram(c.Path, c.BuildID) {
			continue
		}
		out = append(out, c.Path)
	}
	return out
}

// notBundled adds, to the error of a policy file that does not exist and
// whose name could be a bundled policy's, which policies are bundled.
func (c *runCmd) notBundled(err error) error {
	if !errors.Is(err, fs.ErrNotExist) || strings.ContainsRune(c.policy, filepath.Separator) {
		return err
	}
	return inputErrorf("%w (nor is it a bundled policy: %s)", err, strings.Join(policies.Names(), ", "))
}

// runActions are the values of --action.
var runActions = map[string]policy.Action{
	"kill":  policy.ActKillProcess,
	"errno": policy.ActEPERM,
	"trap":  {Kind: policy.Trap},
}

// runOutputs are the files run writes besides CMD's streams.
type runOutputs struct {
	report  *os.File
	logFile *os.File
	log     *enforce.DenialLog
}

// createOutputs creates the --report and --log-denials files before CMD
// runs, so that a path that cannot be written stops syscell before CMD
// has done anything.
func (c *runCmd) createOutputs() (*runOutputs, error) {
	out := &runOutputs{}
	for _, f := range []struct {
		path string
		file **os.File
	}{{c.report, &out.report}, {c.logDenials, &out.logFile}} {
		if f.path == "" {
			continue
		}
		file, err := os.Create(f.path)
		if err != nil {
			out.discard()
			return nil, fileError(f.path, err)
		}
		*f.file = file
	}
	if out.logFile != nil {
		out.log = enforce.NewDenialLog(out.logFile)
	}
	return out, nil
}

// discard removes the files of a run that did not start.
func (o *runOutputs) discard() {
	for _, f := range []*os.File{o.report, o.logFile} {
		if f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
}

// closeLog closes the --log-denials file, reporting a failed write.
func (o *runOutputs) closeLog() error {
	if o.logFile == nil {
		return nil
	}
	err := errors.Join(o.log.Err(), o.logFile.Close())
	if err != nil {
		return fmt.Errorf("write %s: %w", o.logFile.Name(), err)
	}
	return nil
}

// runReport is the JSON of --report.
type runReport struct {
	Mode     enforce.Mode `json:"mode"`
	Policy   string       `json:"policy"`
	Command  []string     `json:"command"`
	ExitCode int          `json:"exit_code"`
	// Signal names the signal that killed CMD, if one did.
	Signal    string         `json:"signal,omitempty"`
	Calls     []enforce.Call `json:"calls"`
	KilledFor *enforce.Call  `json:"killed_for,omitempty"`
}

func newRunReport(mode enforce.Mode, policy string, command []string, res *enforce.Result) runReport {
	r := runReport{Mode: mode, Policy: policy, Command: command, ExitCode: res.ExitCode, Calls: res.Calls, KilledFor: res.KilledFor}
	if res.Signal != 0 {
		r.Signal = unix.SignalName(res.Signal)
	}
	if r.Calls == nil {
		r.Calls = []enforce.Call{}
	}
	return r
}

// writeJSONReport writes a --report, r as indented JSON, and closes f.
func writeJSONReport(f *os.File, r any) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write report %s: %w", f.Name(), err)
	}
	return nil
}

// tell says on stderr how CMD ended, when it did not just exit, and which
// calls the supervisor saw.
func tell(w io.Writer, mode enforce.Mode, name string, res *enforce.Result) {
	switch {
	case res.KilledFor != nil:
		fmt.Fprintf(w, "syscell: killed a process of %s for calling %s %s, which the policy denies with %s\n", name, res.KilledFor.ABI, res.KilledFor.Syscall, res.KilledFor.Action)
	case res.Signal == unix.SIGSYS:
		fmt.Fprintf(w, "syscell: %s killed by SIGSYS, the signal of seccomp's kill-process and trap actions (--mode complain names the call)\n", name)
	case res.Signal != 0:
		fmt.Fprintf(w, "syscell: %s killed by %s\n", name, unix.SignalName(res.Signal))
	}
	if mode == enforce.Enforce {
		return
	}
	if len(res.Calls) == 0 {
		fmt.Fprintf(w, "syscell: %s: no call outside the policy\n", mode)
		return
	}
	fmt.Fprintf(w, "syscell: %s: calls outside the policy:\n", mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  ABI\tSYSCALL\tCALLS\tFIRST IP\tENFORCE\n")
	for _, call := range res.Calls {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%#x\t%s\n", call.ABI, call.Syscall, call.Count, call.FirstIP, call.Action)
	}
	tw.Flush()
}

// allowHeapGuard makes p allow the guard's own syscalls whatever it says of
// them: a guard whose madvise fails cannot keep its promise, so the calls
// are taken out of every rule that would stop them and allowed.
func allowHeapGuard(p *policy.Policy) {
	guard := heapguard.Syscalls()
	var rules []policy.Rule
	for _, r := range p.Rules {
		if r.Action != policy.ActAllow {
			r.Syscalls = slices.DeleteFunc(slices.Clone(r.Syscalls), func(n string) bool { return slices.Contains(guard, n) })
		}
		if len(r.Syscalls) > 0 {
			rules = append(rules, r)
		}
	}
	p.Rules = append(rules, policy.Rule{Syscalls: guard, Action: policy.ActAllow, Pos: policy.Pos{File: "--heap-guard"}})
}

// heapGuardEnv is syscell's environment with the guard preloaded first, in
// mode.
func heapGuardEnv(mode string) ([]string, error) {
	if !slices.Contains(heapguard.Modes(), mode) {
		return nil, inputErrorf("--heap-guard: unknown mode %q (want %s)", mode, strings.Join(heapguard.Modes(), " or "))
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--heap-guard: %w", err)
	}
	lib := heapguard.LibraryPath(exe)
	if _, err := os.Stat(lib); err != nil {
		return nil, fmt.Errorf("--heap-guard: the guard library is missing (make build puts it next to syscell): %w", err)
	}
	env := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, heapguard.ModeEnv+"=")
	}), heapguard.ModeEnv+"="+mode)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			env[i] = "LD_PRELOAD=" + lib + ":" + v
			return env, nil
		}
	}
	return append(env, "LD_PRELOAD="+lib), nil
}
