package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/infer"
	"github.com/syscell/syscell/record"
	"github.com/syscell/syscell/trace"
)

type recordCmd struct {
	output     string
	merge      []string
	format     string
	allowLossy bool
	stackBytes int
	quiet      bool
	// phases and servingFrom record by phase (record.Options.ServingFrom).
	phases      bool
	servingFrom []string
	running
	// bound is "static" to compare the recording with the inferred
	// calls.
	bound string
	cache cacheFlags
}

func recordCommand() *cobra.Command {
	var c recordCmd
	cmd := &cobra.Command{
		Use:   "record [flags] [-- CMD [ARGS...]]",
		Short: "Record which library makes which system calls, as a policy",
		Long: `Run CMD and every process and thread it creates, from CMD's first
instruction to the exit of the last of them, and write a policy: one
compartment per object (executable, shared library) that made system
calls, named by its path with its GNU build-id, listing its calls with how
often each was made; the union of all calls as the rule that allows them;
EPERM for everything else.

A call belongs to the innermost stack frame whose code lies outside the
system runtime (libc, the dynamic loader, the vDSO): to the object that
asked the runtime for it. Calls the runtime makes on its own (start-up,
exit) belong to [runtime], calls from anonymous executable memory (JIT
code) to [anon-exec]. Stacks are unwound with the objects' .eh_frame, so
no frame pointers are needed.

Every call is accounted for: one that could not be attributed, or that the
kernel could not deliver, makes the recording lossy, and then no policy is
written and syscell exits with status 1, unless --allow-lossy (the union
then still allows the unattributed calls). A summary goes to stderr, and a
progress line every few seconds for long runs.

--merge adds earlier recordings (policies record wrote, or syso JSON) to
this one, so that a policy covers several runs; without CMD, record merges
them alone (the recordings of a container's replicas, for instance).
--format syso-json writes {"path": {"x86_64 syscall number": count}}, as
addrfilter's tools do.

--phases records by phase: the policy says, besides each compartment's
calls, which of them it made while serving (serving = [...]), and which
calls start serving (serving-from). A process serves from its own first
call of epoll_wait, epoll_pwait, epoll_pwait2, accept, accept4 or
rt_sigsuspend (the wait of a master process such as nginx's), that call
included, or from its birth when a process that serves forks it; its
threads share its phase (a thread started while starting counts as
serving from its birth: the scheduler may run it after its process
serves), and it keeps serving across execve.
--serving-from CALL,... names other calls and implies --phases. If no
process reaches a serving call, the policy has no phases (a warning says
so). Recordings with phases merge only with recordings serving from the
same calls; syso JSON has no phases.

--cgroup DIR, --pid PID or --container ID record what already runs instead
of CMD: every process of a cgroup (a directory of a mounted cgroup
hierarchy, and the cgroups below it), of the cgroup of process PID (a
container's, podman inspect -f '{{.State.Pid}}' NAME), or of a container
syscell's OCI runtime started (by its id), from their next calls to the
exit of the last of them, or until Ctrl-C, which ends the recording and
writes it. Files are named by the paths the processes see, as inside their
container.

--bound static compares the recording, once written, with what syscell
infer finds CMD (and every program and library the recording saw) can do,
compartment by compartment: the calls recorded but not inferred (a bug of
the analysis or of the attribution; syscell then exits with status 1)
and those inferred but not recorded (what another run may need).

SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 sent to syscell are passed on to CMD,
and recording goes on until CMD and its descendants have exited; a
terminal's Ctrl-C reaches CMD itself, and a second one stops the recording
at once.

record needs root (CAP_BPF and CAP_PERFMON): it attaches an eBPF program to
the system call tracepoint. syscell exits with CMD's exit status, or 128
plus the signal that killed it, once the policy is written.`,
		Example: `  syscell record -o nginx.toml -- nginx -g 'daemon off;'
  syscell record --merge run1.toml --merge run2.toml -o all.toml -- ./server
  syscell record --format syso-json -o calls.json -- ./bench
  syscell record --container web-1 -o web-1.toml
  syscell record --merge web-1.toml --merge web-2.toml -o web.toml
  syscell record --bound static -o redis.toml -- redis-server
  syscell record --phases -o nginx.toml -- nginx -g 'daemon off;'
  syscell record --serving-from poll -o server.toml -- ./server`,
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) },
	}
	fs := cmd.Flags()
	// Flags end at CMD, whose own flags are its business.
	fs.SetInterspersed(false)
	fs.StringVarP(&c.output, "output", "o", "", "write the policy to `FILE` (default: standard output)")
	fs.StringArrayVar(&c.merge, "merge", nil, "add an earlier recording from `FILE` (repeatable)")
	fs.StringVar(&c.format, "format", "toml", "toml (a syscell policy) or syso-json (which has no phases)")
	fs.BoolVar(&c.allowLossy, "allow-lossy", false, "write the policy even if calls were lost or could not be attributed")
	fs.IntVar(&c.stackBytes, "stack-bytes", trace.DefaultStackBytes, fmt.Sprintf("`BYTES` of stack to copy for an unwind, %d to %d", trace.MinStackBytes, trace.MaxStackBytes))
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no progress lines")
	fs.BoolVar(&c.phases, "phases", false, "record by phase: also the calls made while serving, from a process's first "+
		strings.Join(record.DefaultServingFrom, ", ")+" (not written in syso JSON)")
	fs.StringSliceVar(&c.servingFrom, "serving-from", nil, "record by phase, serving from the first of these `CALL`s (comma-separated; implies --phases)")
	c.running.register(fs)
	fs.StringVar(&c.bound, "bound", "", "static: compare the recording with the inferred calls")
	c.cache.register(cmd)
	return cmd
}

func (c *recordCmd) run(cmd *cobra.Command, args []string) error {
	if err := c.check(); err != nil {
		return err
	}
	earlier, err := c.loadMerges()
	if err != nil {
		return err
	}
	switch target := c.running.target(); {
	case target != "" && len(args) > 0:
		return inputErrorf("%s records what already runs: no CMD", target)
	case target != "":
		return c.recordRunning(cmd, earlier)
	case len(args) == 0 && len(earlier) > 0 && c.phased():
		return inputErrorf("--phases and --serving-from say how CMD is recorded; merged recordings keep their own phases")
	case len(args) == 0 && len(earlier) > 0:
		rec, err := record.Merge(earlier...)
		if err != nil {
			return inputErrorf("%v", err)
		}
		return c.write(cmd, rec)
	case len(args) == 0:
		return inputErrorf("usage: %s", cmd.UseLine())
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return inputErrorf("%s: %w", args[0], errors.Unwrap(err))
	}
	source := "the run of " + args[0]
	if err := c.checkMerges(cmd, source, earlier); err != nil {
		return err
	}
	rec, state, err := c.record(cmd, path, args)
	if err != nil {
		return err
	}
	rec.Source = source
	fmt.Fprint(cmd.ErrOrStderr(), "syscell: "+rec.Summary())
	if rec, err = c.withEarlier(cmd, rec, earlier); err != nil {
		return err
	}
	if c.bound == "" {
		if err := c.write(cmd, rec); err != nil {
			return err
		}
		return commandStatus(cmd, args[0], state)
	}
	// The policy carries each compartment's inferred reach, which lets
	// run decide more of the calls made inside libc in the kernel.
	opt, err := c.cache.options()
	if err != nil {
		return err
	}
	program, err := programPath(args[0])
	if err != nil {
		return err
	}
	inferred, err := infer.Bound(rec, program, opt)
	if err != nil {
		return inferError(err)
	}
	infer.Annotate(rec, inferred)
	if err := c.write(cmd, rec); err != nil {
		return err
	}
	if err := checkRecording(cmd.ErrOrStderr(), rec, inferred); err != nil {
		return err
	}
	return commandStatus(cmd, args[0], state)
}

func (c *recordCmd) check() error {
	if c.format != "toml" && c.format != "syso-json" {
		return inputErrorf("--format: unknown format %q (want toml or syso-json)", c.format)
	}
	if c.bound != "" && c.bound != "static" {
		return inputErrorf("--bound: unknown bound %q (want static)", c.bound)
	}
	if c.stackBytes < trace.MinStackBytes || c.stackBytes > trace.MaxStackBytes {
		return inputErrorf("--stack-bytes: %d is not between %d and %d", c.stackBytes, trace.MinStackBytes, trace.MaxStackBytes)
	}
	if _, err := record.ServingNumbers(c.servingFrom); err != nil {
		return inputErrorf("--serving-from: %v", err)
	}
	return checkOutput("-o", c.output)
}

// checkMerges refuses, before anything runs, earlier recordings whose
// phases differ from each other's or from the recording's to be made
// (named source).
func (c *recordCmd) checkMerges(cmd *cobra.Command, source string, earlier []*record.Recording) error {
	this := &record.Recording{Source: source}
	if from := c.options(cmd).ServingFrom; len(from) > 0 {
		this.ServingFrom = slices.Compact(slices.Sorted(slices.Values(from)))
	}
	if err := record.CheckPhases(append([]*record.Recording{this}, earlier...)...); err != nil {
		return inputErrorf("%v", err)
	}
	return nil
}

// phased says whether CMD is recorded by phase.
func (c *recordCmd) phased() bool { return c.phases || len(c.servingFrom) > 0 }

// options are the recording's options.
func (c *recordCmd) options(cmd *cobra.Command) record.Options {
	opts := record.Options{Trace: trace.Options{StackBytes: c.stackBytes}}
	if !c.quiet {
		opts.Progress = cmd.ErrOrStderr()
	}
	switch {
	case len(c.servingFrom) > 0:
		opts.ServingFrom = c.servingFrom
	case c.phases:
		opts.ServingFrom = record.DefaultServingFrom
	}
	return opts
}

// withEarlier adds the earlier recordings to this run's. A run with phases in
// which no process served has none, unless it merges with recordings
// that have: its calls are then all made before serving.
func (c *recordCmd) withEarlier(cmd *cobra.Command, rec *record.Recording, earlier []*record.Recording) (*record.Recording, error) {
	if rec.Phased() && rec.Stats.ServingProcesses == 0 && rec.Stats.Serving == 0 {
		if len(earlier) == 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "syscell: no process reached a serving call (%s): the policy has no phases\n", strings.Join(rec.ServingFrom, ", "))
			rec.DropPhases()
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "syscell: no process reached a serving call (%s): this run's calls are all made before serving\n", strings.Join(rec.ServingFrom, ", "))
		}
	}
	if len(earlier) == 0 {
		return rec, nil
	}
	return record.Merge(append([]*record.Recording{rec}, earlier...)...)
}

// loadMerges reads the --merge files before CMD runs: a bad one stops
// syscell before CMD has done anything.
func (c *recordCmd) loadMerges() ([]*record.Recording, error) {
	var recs []*record.Recording
	for _, path := range c.merge {
		rec, err := record.Load(path)
		if err != nil {
			return nil, fileError(path, err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// record runs CMD under the recorder. SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2
// are passed on to CMD, which is recorded until it (and every process it
// started) exits. A terminal's SIGINT reaches CMD directly; a second one
// ends the recording at once, with what was recorded until then.
func (c *recordCmd) record(cmd *cobra.Command, path string, args []string) (*record.Recording, *os.ProcessState, error) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, unix.SIGTERM, unix.SIGHUP, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(signals)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, unix.SIGINT)
	defer signal.Stop(interrupts)
	go func() {
		<-interrupts
		<-interrupts
		cancel()
	}()
	target := exec.Command(path, args[1:]...)
	target.Args[0] = args[0]
	target.Stdin, target.Stdout, target.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	opts := c.options(cmd)
	opts.Signals = signals
	rec, state, err := record.Run(ctx, target, opts)
	if errors.Is(err, unix.EPERM) {
		return nil, nil, fmt.Errorf("record needs root (CAP_BPF and CAP_PERFMON) to load its eBPF program: %w", err)
	}
	return rec, state, err
}

// write writes the recording, unless it is lossy and that is not allowed.
func (c *recordCmd) write(cmd *cobra.Command, rec *record.Recording) error {
	if rec.Lossy() && !c.allowLossy {
		return fmt.Errorf("%d calls could not be attributed and %d events were lost: no policy written (--allow-lossy writes it anyway)",
			rec.Unattributed(), rec.Lost.Total())
	}
	return writeRecording(cmd, c.output, c.format, rec)
}

// writeRecording writes a recording as a policy in syscell's TOML or as
// syso JSON.
func writeRecording(cmd *cobra.Command, path, format string, rec *record.Recording) error {
	var buf bytes.Buffer
	var err error
	if format == "syso-json" {
		err = rec.WriteSyso(&buf)
	} else {
		err = rec.WriteTOML(&buf)
	}
	if err != nil {
		return err
	}
	return writeOutput(cmd, path, buf.Bytes())
}

// commandStatus is syscell's exit status for how CMD ended: nothing if it
// succeeded, else its status, or 128 plus the signal that killed it.
func commandStatus(cmd *cobra.Command, name string, state *os.ProcessState) error {
	if state == nil {
		return nil
	}
	ws, _ := state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		fmt.Fprintf(cmd.ErrOrStderr(), "syscell: %s killed by %s\n", name, unix.SignalName(ws.Signal()))
		return exitStatus(128 + int(ws.Signal()))
	case state.ExitCode() != 0:
		return exitStatus(state.ExitCode())
	}
	return nil
}
