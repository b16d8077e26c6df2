package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// runCompartments runs CMD with the per-library filter of a policy with
// compartments (package cell): each library's own calls are decided by
// its compartment, and the rules bound them all.
func (c *runCmd) runCompartments(cmd *cobra.Command, args []string, path string, p *policy.Policy, mode enforce.Mode, sigs *caughtSignals) error {
	if c.action != "" || c.heapGuard != "" {
		return inputErrorf("the policy has compartments, which run enforces as written: --action and --heap-guard apply to policies without compartments")
	}
	rule, err := cell.ParseExecRule(c.exec)
	if err != nil {
		return inputErrorf("--exec: %w", err)
	}
	warnProcMem := !c.denyProcMem && !c.quiet && cell.ProcMemExposed(p)
	if warnProcMem {
		// The kernel is probed (a hundred microseconds) while the
		// compartments are checked against the disk.
		go cell.ProcMemWrites()
	}
	if err := c.checkStale(cmd, p); err != nil {
		return err
	}
	out, err := c.createOutputs()
	if err != nil {
		return err
	}
	tellWeaknesses(cmd.ErrOrStderr(), warnProcMem, c.stats)
	command := enforce.Command{Path: path, Args: args, Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
	res, err := runCell(p, command, cell.Options{Mode: mode, DenialLog: out.log, Exec: rule, CountKernel: c.stats, DenyProcMem: c.denyProcMem}, sigs)
	if res == nil {
		out.discard()
		if errors.Is(err, cell.ErrNotAuditable) {
			return badInput{err}
		}
		return err
	}
	tellCell(cmd.ErrOrStderr(), mode, args[0], res, c.stats)
	if mode == enforce.Enforce && !c.quiet {
		tellDenials(cmd.ErrOrStderr(), total(res.Denied, func(d cell.Denied) int { return d.Count }), res.FirstDenied, c.logDenials)
	}
	if out.report != nil {
		err = errors.Join(err, writeCellReport(out.report, mode, c.policy, args, res))
	}
	if err = errors.Join(err, out.closeLog()); err != nil {
		return err
	}
	return exitStatusOf(&enforce.Result{ExitCode: res.ExitCode, Signal: res.Signal})
}

// checkStale says which compartments name objects the disk no longer
// holds as recorded; under --strict they stop syscell before CMD starts.
func (c *runCmd) checkStale(cmd *cobra.Command, p *policy.Policy) error {
	var lines []string
	for _, s := range cell.StaleCompartments(p) {
		lines = append(lines, s.String())
	}
	if len(lines) == 0 {
		return nil
	}
	if c.strict {
		return inputErrorf("%s\n(--strict: a policy must match the objects on disk)", strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		fmt.Fprintf(cmd.ErrOrStderr(), "syscell: warning: %s\n", l)
	}
	return nil
}

// checkVDSO says which functions the policy assumes the vDSO exports
// this kernel's lacks, whether it runs per library or as a whole-process
// filter (the rules lack the fallbacks' calls too); under --strict that
// stops syscell before CMD starts.
func (c *runCmd) checkVDSO(cmd *cobra.Command, p *policy.Policy) error {
	problem := cell.StaleVDSO(p)
	switch {
	case problem == "":
		return nil
	case c.strict:
		return inputErrorf("%s\n(--strict: a policy must match this kernel's vDSO)", problem)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "syscell: warning: %s\n", problem)
	return nil
}

// tellWeaknesses says on stderr, before CMD starts, what of this kernel
// and CPU lets code outside its compartment: writes through /proc/PID/mem,
// with warnProcMem (the policy lets code open files, and neither
// --deny-proc-mem nor -q is set), and, with stats, the hardware that would
// do more.
func tellWeaknesses(w io.Writer, warnProcMem, stats bool) {
	if warnProcMem {
		if writes, why := cell.ProcMemWrites(); writes {
			fmt.Fprintf(w, "syscell: this kernel lets a process write its own code through /proc/PID/mem whatever its protection, %s: code that may open files could rewrite another library's code; --deny-proc-mem refuses such opens\n", why)
		}
	}
	if stats {
		hw := cell.ProbeHardware()
		fmt.Fprintf(w, "syscell: hardware: protection keys %s, shadow stacks %s (syscell uses neither yet)\n", has(hw.ProtectionKeys), has(hw.ShadowStacks))
	}
}

func has(ok bool) string {
	if ok {
		return "present"
	}
	return "absent"
}

// runCell runs command, passing on the signals meant for it, as
// runSupervised does.
func runCell(p *policy.Policy, command enforce.Command, opt cell.Options, sigs *caughtSignals) (*cell.Result, error) {
	opt.Signals = sigs.caught()
	return cell.Run(context.Background(), p, command, opt)
}

// tellCell says on stderr how CMD ended when it did not just exit, what
// weakens the filter, in audit and complain modes the calls outside the
// policy, and, with stats, which calls the supervisor decided.
func tellCell(w io.Writer, mode enforce.Mode, name string, res *cell.Result, stats bool) {
	switch {
	case res.Signal == unix.SIGSYS:
		fmt.Fprintf(w, "syscell: %s killed by SIGSYS, the signal of seccomp's kill-process and trap actions\n", name)
	case res.Signal != 0:
		fmt.Fprintf(w, "syscell: %s killed by %s\n", name, unix.SignalName(res.Signal))
	}
	if res.Start.Unsealed != 0 {
		fmt.Fprintf(w, "syscell: the stub window and the libraries' code are not sealed (mseal: %v): code the policy lets call mprotect could rewrite them\n", res.Start.Unsealed)
	}
	if mode != enforce.Enforce || stats {
		tellDenied(w, mode, res.Denied)
	}
	for _, d := range res.Denied {
		if d.Why != "" && mode != enforce.Audit {
			fmt.Fprintf(w, "syscell: %s: %d %s stopped: %s\n", d.Owner, d.Count, d.Syscall, d.Why)
		}
	}
	unattributed := 0
	for _, s := range res.Supervised {
		if s.Owner == cell.OwnerUnattributed {
			unattributed += s.Count
		}
	}
	if unattributed > 0 && !stats {
		fmt.Fprintf(w, "syscell: %d calls could not be attributed to a compartment and were denied (--stats lists them)\n", unattributed)
	}
	if !stats {
		return
	}
	fmt.Fprintf(w, "syscell: the filter: %d instructions for %d compartments, compiled at start in %.2f ms\n",
		res.Start.Instructions, len(res.Start.Layout.Slots), float64(res.Start.CompileTime.Microseconds())/1000)
	tellKernel(w, res)
	if res.Phased {
		fmt.Fprintf(w, "syscell: %d processes served (the policy's phases)\n", res.Served)
	}
	if len(res.Supervised) == 0 {
		fmt.Fprintf(w, "syscell: no call was supervised\n")
		return
	}
	fmt.Fprintf(w, "syscell: the supervisor decided %d calls, each in %s (median), %s (99th percentile) from receiving it to answering it\n",
		res.Latency.Calls, micros(res.Latency.Median), micros(res.Latency.P99))
	if c := res.Callers; c.Snapshots+c.Proc > 0 {
		fmt.Fprintf(w, "syscell: callers looked for in the kernel's snapshots %d times, in /proc %d times\n", c.Snapshots, c.Proc)
	}
	fmt.Fprintf(w, "syscell: supervised calls:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  OWNER\tSYSCALL\tCALLS\tVERDICT\n")
	for _, s := range res.Supervised {
		verdict := "denied"
		if s.Allowed {
			verdict = "allowed"
		}
		if s.Why != "" {
			verdict += ": " + s.Why
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", s.Owner, s.Syscall, s.Count, verdict)
	}
	tw.Flush()
}

// tellKernel lists the calls the kernel let run, by the code that made
// them, and how many of all the calls that ran the supervisor decided.
func tellKernel(w io.Writer, res *cell.Result) {
	if res.KernelErr != nil {
		fmt.Fprintf(w, "syscell: the calls decided in the kernel were not counted (that needs root): %v\n", res.KernelErr)
		return
	}
	fmt.Fprintf(w, "syscell: calls the kernel let run, by the code that made them:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  CODE\tSYSCALL\tCALLS\n")
	var ran uint64
	for _, k := range res.Kernel {
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", k.Owner, k.Syscall, k.Calls)
		ran += k.Calls
	}
	tw.Flush()
	var supervised uint64
	for _, s := range res.Supervised {
		if s.Allowed {
			supervised += uint64(s.Count)
		}
	}
	share := 0.0
	if ran > 0 {
		share = 100 * float64(supervised) / float64(ran)
	}
	fmt.Fprintf(w, "syscell: %d calls ran: %d decided in the kernel, %d (%.1f %%) by the supervisor\n", ran, ran-min(ran, supervised), supervised, share)
}

// micros writes d in microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
}

// tellDenied lists the calls outside the policy, by who made them.
func tellDenied(w io.Writer, mode enforce.Mode, denied []cell.Denied) {
	if len(denied) == 0 {
		fmt.Fprintf(w, "syscell: %s: no call outside the policy\n", mode)
		return
	}
	fmt.Fprintf(w, "syscell: %s: calls outside the policy:\n", mode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  OWNER\tABI\tSYSCALL\tCALLS\tFIRST IP\tENFORCE\n")
	for _, d := range denied {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%#x\t%s\n", d.Owner, d.ABI, d.Syscall, d.Count, d.FirstIP, d.Action)
	}
	tw.Flush()
}

// cellReport is the JSON of --report for a policy with compartments.
type cellReport struct {
	Mode     enforce.Mode `json:"mode"`
	Policy   string       `json:"policy"`
	Command  []string     `json:"command"`
	ExitCode int          `json:"exit_code"`
	// Signal names the signal that killed CMD, if one did.
	Signal     string            `json:"signal,omitempty"`
	Supervised []cell.Supervised `json:"supervised"`
	// Denied are the calls outside the policy: every one in audit and
	// complain modes, those the supervisor denied when enforcing.
	Denied []cell.Denied `json:"denied"`
	// Unsealed is why the stub window could not be sealed, if it could
	// not.
	Unsealed string `json:"unsealed,omitempty"`
	// Kernel counts, with --stats as root, every call that ran, by the
	// code that made them: with Supervised, what share the supervisor
	// decided.
	Kernel []cell.KernelCalls `json:"kernel,omitempty"`
}

func writeCellReport(f *os.File, mode enforce.Mode, policy string, command []string, res *cell.Result) error {
	r := cellReport{Mode: mode, Policy: policy, Command: command, ExitCode: res.ExitCode, Supervised: res.Supervised, Denied: res.Denied, Kernel: res.Kernel}
	if res.Signal != 0 {
		r.Signal = unix.SignalName(res.Signal)
	}
	if res.Start.Unsealed != 0 {
		r.Unsealed = res.Start.Unsealed.Error()
	}
	if r.Supervised == nil {
		r.Supervised = []cell.Supervised{}
	}
	if r.Denied == nil {
		r.Denied = []cell.Denied{}
	}
	return writeJSONReport(f, r)
}
