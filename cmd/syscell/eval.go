package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compile"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

type evalCmd struct {
	policyFlags
	syscall string
	args    []string
	arch    string
	policy  string
}

func evalCommand() *cobra.Command {
	var c evalCmd
	cmd := &cobra.Command{
		Use:   "eval POLICY|PROGRAM --syscall NAME|NR [--arg I=V ...]",
		Short: "Decide one syscall with a policy or a raw program",
		Long: `Run one syscall through a seccomp program in syscell's interpreter and print
the verdict, then how many instructions ran and whether the kernel's action
cache would hold the verdict.

The input is a policy (TOML or OCI JSON), which is compiled as syscell
compile would compile it with no --arch, or a raw program (an array of
struct sock_filter). The two are told apart by content: every instruction
of a raw program holds a zero byte, and no policy text does.

When a policy is known (the input, or --policy for a program), its own
verdict is printed too; if program and policy disagree, eval fails.

--arch is the ABI the syscall is made through; calls from an ABI the program
does not cover get its bad-arch action.`,
		Example: `  syscell eval docker-default.json --syscall socket --arg 0=40
  syscell eval docker.bpf --syscall 41 --arg 0=2 --policy docker-default.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&c.syscall, "syscall", "", "the syscall, by `NAME` or number")
	fs.StringArrayVar(&c.args, "arg", nil, "argument `I=V`: argument I (0 to 5) has value V; repeatable")
	fs.StringVar(&c.arch, "arch", "x86_64", "the ABI the syscall is made through: x86_64, x86 or x32")
	fs.StringVar(&c.policy, "policy", "", "the `POLICY` a raw program implements, to compare verdicts with")
	return cmd
}

func (c *evalCmd) run(cmd *cobra.Command, path string) error {
	in, err := c.input()
	if err != nil {
		return err
	}
	prog, r, err := c.program(cmd, path)
	if err != nil {
		return err
	}
	res, err := bpf.Run(prog, &in)
	if err != nil {
		return err
	}
	got := policy.ActionFromRet(res.Ret)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nexecuted %d instructions, cacheable: %s\n", got, res.Executed, yesNo(res.KernelCacheable))
	if r == nil {
		return write(cmd.OutOrStdout(), b.Bytes())
	}
	want := r.Decide(in.Arch, in.Nr, in.Args)
	fmt.Fprintf(&b, "policy: %s\n", want)
	if err := write(cmd.OutOrStdout(), b.Bytes()); err != nil {
		return err
	}
	if want.Ret() != res.Ret {
		return fmt.Errorf("the program and the policy disagree on %s %s: program %s, policy %s", c.arch, c.syscall, got, want)
	}
	return nil
}

// input builds the seccomp_data of the call from the flags.
func (c *evalCmd) input() (bpf.SeccompData, error) {
	if c.syscall == "" {
		return bpf.SeccompData{}, inputErrorf("missing --syscall NAME|NR")
	}
	a, err := parseArch(c.arch)
	if err != nil {
		return bpf.SeccompData{}, err
	}
	nr, err := syscalls.Resolve(a, c.syscall)
	if err != nil {
		return bpf.SeccompData{}, inputErrorf("--syscall: %w", err)
	}
	in := bpf.SeccompData{Nr: nr, Arch: a.AuditArch()}
	for _, arg := range c.args {
		i, v, err := parseArg(arg)
		if err != nil {
			return bpf.SeccompData{}, err
		}
		in.Args[i] = v
	}
	return in, nil
}

// parseArg reads "I=V", V in decimal, 0x hex or 0o octal, or negative.
func parseArg(s string) (int, uint64, error) {
	is, vs, ok := strings.Cut(s, "=")
	i, err := strconv.Atoi(is)
	if !ok || err != nil || i < 0 || i >= policy.MaxArgs {
		return 0, 0, inputErrorf("--arg %q: want I=V with I from 0 to %d", s, policy.MaxArgs-1)
	}
	v, err := strconv.ParseUint(vs, 0, 64)
	if err != nil {
		var neg int64
		neg, err = strconv.ParseInt(vs, 0, 64)
		v = uint64(neg)
	}
	if err != nil {
		return 0, 0, inputErrorf("--arg %q: %q is not a 64-bit number", s, vs)
	}
	return i, v, nil
}

// program reads the program to run, and the policy it implements when one
// is known.
func (c *evalCmd) program(cmd *cobra.Command, path string) ([]bpf.Instruction, *policy.Resolved, error) {
	data, _, err := readInput(path)
	if err != nil {
		return nil, nil, err
	}
	if isRawProgram(data) {
		return c.fromProgram(cmd, path, data)
	}
	if c.policy != "" {
		return nil, nil, inputErrorf("--policy is for a raw program, and %s is a policy", path)
	}
	r, err := archFlag(nil).resolve(cmd, &c.policyFlags, path)
	if err != nil {
		return nil, nil, err
	}
	prog, err := compilePolicy(r, compile.Options{})
	return prog, r, err
}

func (c *evalCmd) fromProgram(cmd *cobra.Command, path string, data []byte) ([]bpf.Instruction, *policy.Resolved, error) {
	prog, err := parseProgram(path, data)
	if err != nil || c.policy == "" {
		return prog, nil, err
	}
	r, err := archFlag(nil).resolve(cmd, &c.policyFlags, c.policy)
	return prog, r, err
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
