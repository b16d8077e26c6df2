package main

import (
	"bytes"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bench/sec"
	"github.com/syscell/syscell/bpf"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure what seccomp programs cost in the running kernel",
		Args:  unknownCommand,
		RunE:  missingCommand,
	}
	cmd.AddCommand(benchFilterCommand())
	cmd.AddCommand(benchMechCommand())
	return cmd
}

type benchFilterCmd struct {
	policyFlags
	compileFlags
	arch    archFlag
	calls   int
	runs    int
	jsonOut bool
}

func benchFilterCommand() *cobra.Command {
	var c benchFilterCmd
	cmd := &cobra.Command{
		Use:   "filter POLICY|PROGRAM",
		Short: "Compile a policy and time syscalls under the program in the kernel",
		Long: `Compile a policy as syscell compile does (or take a raw program, such as
another compiler's, told apart by content as in eval), then make each of a list of x86_64
syscalls (the top of a PostgreSQL profile: futex, sendmmsg, fstat, ...) many
times in child processes under three programs: one that allows everything,
the baseline; the compiled program, whose verdicts the kernel's action cache
may answer; and the program with the cache defeated, so that it runs on every
call. Denied calls are turned into errnos, so they are timed too and nothing
dies. The table gives median nanoseconds per call and the overhead against
the baseline; the aggregate weighs calls by the profile's counts.

Timings are noisy on shared machines: compare numbers from one run.`,
		Example: `  syscell bench filter docker-default.json --arch x86_64 --runs 3`,
		Args:    exactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.compileFlags.register(cmd)
	c.arch.register(cmd)
	fs := cmd.Flags()
	fs.IntVar(&c.calls, "calls", sec.DefaultCallsPerRun, "how many times each run makes each syscall")
	fs.IntVar(&c.runs, "runs", sec.DefaultRuns, "how many runs; the median is kept")
	fs.BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	return cmd
}

// program compiles the policy at path, or reads it as a raw program (another
// compiler's, for comparison).
func (c *benchFilterCmd) program(cmd *cobra.Command, path string) ([]bpf.Instruction, error) {
	data, _, err := readInput(path)
	if err != nil {
		return nil, err
	}
	if isRawProgram(data) {
		return parseProgram(path, data)
	}
	opt, err := c.options()
	if err != nil {
		return nil, err
	}
	r, err := c.arch.resolve(cmd, &c.policyFlags, path)
	if err != nil {
		return nil, err
	}
	return compilePolicy(r, opt)
}

func (c *benchFilterCmd) run(cmd *cobra.Command, path string) error {
	if c.calls <= 0 || c.runs <= 0 {
		return inputErrorf("--calls and --runs must be positive")
	}
	prog, err := c.program(cmd, path)
	if err != nil {
		return err
	}
	// An interrupt cancels the run, which kills the children.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	rep, err := sec.Run(ctx, prog, sec.DefaultCalls(), sec.Options{CallsPerRun: c.calls, Runs: c.runs})
	if err != nil {
		return err
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
