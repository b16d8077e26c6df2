package main

import (
	"bytes"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/policy"
)

// converters write a policy in each format convert knows.
var converters = map[string]func(*policy.Policy, *bytes.Buffer) error{
	"toml": func(p *policy.Policy, b *bytes.Buffer) error { return p.WriteTOML(b) },
	"oci":  func(p *policy.Policy, b *bytes.Buffer) error { return p.WriteOCI(b) },
}

type convertCmd struct {
	policyFlags
	arch   archFlag
	to     string
	output string
}

func convertCommand() *cobra.Command {
	var c convertCmd
	cmd := &cobra.Command{
		Use:   "convert POLICY --to toml|oci",
		Short: "Convert a policy between syscell's TOML and OCI JSON",
		Long: `Convert a policy between syscell's TOML and an OCI seccomp profile (JSON).

A Docker profile's conditional entries (includes, excludes) are resolved for
the container and host that --caps and --kernel describe. The output depends
only on what the policy means: rules are grouped by action and conditions,
syscalls sorted. What OCI cannot say is left out (compartments).
--arch replaces the policy's ABIs.`,
		Example: `  syscell convert docker-default.json --to toml --kernel 6.18 -o docker.toml
  syscell convert policy.toml --to oci`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.arch.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&c.to, "to", "", "output format: toml or oci")
	fs.StringVarP(&c.output, "output", "o", "", "write the policy to `FILE` instead of standard output")
	return cmd
}

func (c *convertCmd) run(cmd *cobra.Command, path string) error {
	convert, ok := converters[c.to]
	if !ok {
		return inputErrorf("--to: want toml or oci, not %q", c.to)
	}
	p, err := c.arch.loadFor(cmd, &c.policyFlags, path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := convert(p, &b); err != nil {
		return err
	}
	return writeOutput(cmd, c.output, b.Bytes())
}
