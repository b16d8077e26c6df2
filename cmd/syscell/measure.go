package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/measure"
)

type measureCmd struct {
	policyFlags
	arch    archFlag
	policy  string
	jsonOut bool
}

func measureCommand() *cobra.Command {
	var c measureCmd
	cmd := &cobra.Command{
		Use:   "measure PROGRAM --policy POLICY",
		Short: "Measure a raw seccomp program, whoever compiled it, against a policy",
		Long: `Measure a raw seccomp program (an array of struct sock_filter, such as
libseccomp's seccomp_export_bpf or syscell compile writes) against the policy
it implements: its size, the instructions it executes per syscall (uniform
over every syscall number 0-1023 of each ABI, and over the argument vectors
of syscalls with argument rules), the allowed syscalls the kernel's action
cache cannot hold, and every input on which it disagrees with the policy.`,
		Example: `  syscell measure libseccomp.bpf --policy docker-default.json --arch x86_64`,
		Args:    exactArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.arch.register(cmd)
	cmd.Flags().StringVar(&c.policy, "policy", "", "the `POLICY` (TOML or OCI JSON) the program implements")
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print the report as JSON")
	return cmd
}

func (c *measureCmd) run(cmd *cobra.Command, path string) error {
	if c.policy == "" {
		return inputErrorf("missing --policy POLICY")
	}
	r, err := c.arch.resolve(cmd, &c.policyFlags, c.policy)
	if err != nil {
		return err
	}
	prog, err := readProgram(path)
	if err != nil {
		return err
	}
	rep, err := measure.Measure(prog, r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if c.jsonOut {
		err = writeReportJSON(&b, rep)
	} else {
		writeReport(&b, rep)
		writeLists(&b, rep)
	}
	if err != nil {
		return err
	}
	return write(cmd.OutOrStdout(), b.Bytes())
}

// writeReport writes the figures of a report, one a line.
func writeReport(w io.Writer, rep *measure.Report) {
	fmt.Fprintf(w, "%-15s %d\n", "instructions", rep.Instructions)
	fmt.Fprintf(w, "%-15s mean %.2f, max %d\n", "uniform", rep.UniformMean, rep.UniformMax)
	fmt.Fprintf(w, "%-15s mean %.2f, max %d\n", "arg rules", rep.ArgRulesMean, rep.ArgRulesMax)
	fmt.Fprintf(w, "%-15s %d\n", "not cacheable", len(rep.NotCacheable))
	fmt.Fprintf(w, "%-15s %d of %d inputs\n", "mismatches", len(rep.Mismatches), rep.Inputs)
}

// writeLists names the syscalls behind the counts of writeReport.
func writeLists(w io.Writer, rep *measure.Report) {
	for _, name := range rep.NotCacheable {
		fmt.Fprintf(w, "not cacheable: %s\n", name)
	}
	for _, m := range rep.Mismatches {
		fmt.Fprintf(w, "mismatch: %s\n", m)
	}
}

// reportJSON is measure.Report for machines; mismatches are written as
// text, since their fields are types of other packages.
type reportJSON struct {
	Instructions int      `json:"instructions"`
	UniformMean  float64  `json:"uniform_mean"`
	UniformMax   int      `json:"uniform_max"`
	ArgRulesMean float64  `json:"arg_rules_mean"`
	ArgRulesMax  int      `json:"arg_rules_max"`
	NotCacheable []string `json:"not_cacheable"`
	Mismatches   []string `json:"mismatches"`
	Inputs       int      `json:"inputs"`
}

func writeReportJSON(w io.Writer, rep *measure.Report) error {
	out := reportJSON{
		Instructions: rep.Instructions,
		UniformMean:  rep.UniformMean,
		UniformMax:   rep.UniformMax,
		ArgRulesMean: rep.ArgRulesMean,
		ArgRulesMax:  rep.ArgRulesMax,
		NotCacheable: append([]string{}, rep.NotCacheable...),
		Mismatches:   []string{},
		Inputs:       rep.Inputs,
	}
	for _, m := range rep.Mismatches {
		out.Mismatches = append(out.Mismatches, m.String())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
