package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/measure"
	"github.com/syscell/syscell/policy"
)

// formats render a program for the output of compile.
var formats = map[string]func([]bpf.Instruction, *policy.Resolved) []byte{
	"raw":  func(prog []bpf.Instruction, _ *policy.Resolved) []byte { return bpf.Encode(prog) },
	"asm":  func(prog []bpf.Instruction, _ *policy.Resolved) []byte { return []byte(bpf.Disassemble(prog)) },
	"json": formatJSON,
}

type compileCmd struct {
	policyFlags
	compileFlags
	arch   archFlag
	format string
	output string
	stats  bool
}

func compileCommand() *cobra.Command {
	var c compileCmd
	cmd := &cobra.Command{
		Use:   "compile POLICY",
		Short: "Compile a policy into a seccomp-bpf program",
		Long: `Compile a policy, in syscell's TOML or as an OCI/Docker seccomp profile
(JSON), into a seccomp-bpf program. The same input always gives the same bytes.

Formats: raw is the array of struct sock_filter the kernel loads (as
libseccomp's seccomp_export_bpf writes it); asm is the disassembly; json is
{"arch": [...], "instructions": [{"code", "jt", "jf", "k"}, ...]}.
Raw output is not written to a terminal: use -o FILE or a redirection.`,
		Example: `  syscell compile docker-default.json -o docker.bpf
  syscell compile policy.toml --format asm --stats --hot futex,read`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.compileFlags.register(cmd)
	c.arch.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&c.format, "format", "raw", "output format: raw, asm or json")
	fs.StringVarP(&c.output, "output", "o", "", "write the program to `FILE` instead of standard output")
	fs.BoolVar(&c.stats, "stats", false, "print the program's measurements and the compile time to standard error")
	return cmd
}

func (c *compileCmd) run(cmd *cobra.Command, path string) error {
	render, ok := formats[c.format]
	if !ok {
		return inputErrorf("--format: unknown format %q (want raw, asm or json)", c.format)
	}
	if c.format == "raw" && c.output == "" && isTerminal(cmd.OutOrStdout()) {
		return inputErrorf("not writing a binary program to a terminal: use -o FILE, a redirection or --format asm")
	}
	opt, err := c.options()
	if err != nil {
		return err
	}
	r, err := c.arch.resolve(cmd, &c.policyFlags, path)
	if err != nil {
		return err
	}
	start := time.Now()
	prog, err := compilePolicy(r, opt)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if err := writeOutput(cmd, c.output, render(prog, r)); err != nil {
		return err
	}
	if !c.stats {
		return nil
	}
	return printStats(cmd, prog, r, elapsed)
}

func printStats(cmd *cobra.Command, prog []bpf.Instruction, r *policy.Resolved, elapsed time.Duration) error {
	rep, err := measure.Measure(prog, r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	writeReport(&b, rep)
	fmt.Fprintf(&b, "%-15s %s\n", "compile time", elapsed.Round(time.Microsecond))
	return write(cmd.ErrOrStderr(), b.Bytes())
}

// formatJSON writes one instruction a line, so that programs diff well.
func formatJSON(prog []bpf.Instruction, r *policy.Resolved) []byte {
	var b bytes.Buffer
	arches := make([]string, len(r.Tables))
	for i, t := range r.Tables {
		arches[i] = fmt.Sprintf("%q", t.Arch)
	}
	fmt.Fprintf(&b, "{\"arch\":[%s],\"instructions\":[\n", strings.Join(arches, ","))
	for i, ins := range prog {
		sep := ","
		if i == len(prog)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "{\"code\":%d,\"jt\":%d,\"jf\":%d,\"k\":%d}%s\n", ins.Op, ins.Jt, ins.Jf, ins.K, sep)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}
