package main

import (
	"bytes"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bench/mech"
)

type benchMechCmd struct {
	iters     []int
	runs      int
	mechs     []string
	slowLimit int
	jsonOut   bool
	plot      string
}

func benchMechCommand() *cobra.Command {
	var c benchMechCmd
	cmd := &cobra.Command{
		Use:   "mech",
		Short: "Time a loop of getpid calls under each syscall-interception mechanism",
		Long:  benchMechLong(),

		Example: `  syscell bench mech --iters 10,1000,100000 --runs 3 --plot mech.svg`,
		Args:    exactArgs(0),
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	fs := cmd.Flags()
	fs.IntSliceVar(&c.iters, "iters", mech.DefaultIterations, "numbers of getpid calls to time, comma-separated")
	fs.IntVar(&c.runs, "runs", mech.DefaultRuns, "payloads per mechanism and number of calls")
	fs.StringSliceVar(&c.mechs, "mechs", mechanismNames(), "mechanisms to measure, comma-separated")
	fs.IntVar(&c.slowLimit, "slow-limit", 100_000, "most calls for the slow mechanisms; 0 for no limit")
	fs.BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&c.plot, "plot", "", "also draw the report as an SVG chart into `FILE`")
	return cmd
}

// benchMechLong is the command's help, its list of mechanisms taken from
// package mech.
func benchMechLong() string {
	var b strings.Builder
	b.WriteString(`Extend seccomp-benchmark's ptrace-against-seccomp table to every mechanism:
a payload process (this binary, re-executed) makes N raw getpid calls in a
loop under each of
`)
	for _, m := range mech.Mechanisms() {
		fmt.Fprintf(&b, "\n  %-17s %s", m, m.Description())
	}
	b.WriteString(`

The payload times its own loop (start-up excluded). The table gives each
run's time in ms, the mean, the median, the median per call and the mean
against seccomp's. The slow mechanisms (user-notif, ptrace, seccomp-trace)
stop at --slow-limit calls. eBPF needs root; without it, it is skipped
with a message. Timings are noisy on shared machines: compare figures of
one run.`)
	return b.String()
}

// mechanismNames names every mechanism, for the default of --mechs.
func mechanismNames() []string {
	var names []string
	for _, m := range mech.Mechanisms() {
		names = append(names, string(m))
	}
	return names
}

func (c *benchMechCmd) run(cmd *cobra.Command) error {
	opts, err := c.options()
	if err != nil {
		return err
	}
	// An interrupt cancels the run, which kills the payloads.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	rep, err := mech.Run(ctx, opts)
	if err != nil {
		return err
	}
	if c.plot != "" {
		svg, err := rep.Chart().SVG()
		if err != nil {
			return fmt.Errorf("plot: %w", err)
		}
		if err := os.WriteFile(c.plot, svg, 0o644); err != nil {
			return fmt.Errorf("write plot: %w", err)
		}
	}
	var b bytes.Buffer
	if c.jsonOut {
		err = rep.WriteJSON(&b)
	} else {
		err = rep.WriteTable(&b)
	}
	if err != nil {
		return err
	}
	return write(cmd.OutOrStdout(), b.Bytes())
}

// options checks the flags; any problem is bad input.
func (c *benchMechCmd) options() (mech.Options, error) {
	opts := mech.Options{Iterations: c.iters, Runs: c.runs, SlowLimit: c.slowLimit}
	for _, n := range c.iters {
		if n <= 0 {
			return opts, inputErrorf("--iters: %d is not a positive number of calls", n)
		}
	}
	if c.runs <= 0 {
		return opts, inputErrorf("--runs must be positive")
	}
	if c.slowLimit < 0 {
		return opts, inputErrorf("--slow-limit must not be negative")
	}
	for _, name := range c.mechs {
		m, err := mech.ParseMechanism(strings.TrimSpace(name))
		if err != nil {
			return opts, inputErrorf("--mechs: %w", err)
		}
		opts.Mechanisms = append(opts.Mechanisms, m)
	}
	if len(opts.Mechanisms) == 0 {
		return opts, inputErrorf("--mechs names no mechanism")
	}
	return opts, nil
}
