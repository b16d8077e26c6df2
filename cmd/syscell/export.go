package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/policy"
)

// exporter writes a policy in one of export's formats.
type exporter struct {
	// what names the format in messages.
	what  string
	write func(*policy.Policy, policy.SPOOptions, *bytes.Buffer) error
}

// exporters are export's formats, by the name --to gives them.
var exporters = map[string]exporter{
	"oci": {"an OCI profile", func(p *policy.Policy, _ policy.SPOOptions, b *bytes.Buffer) error { return p.WriteOCI(b) }},
	"spo": {"a SeccompProfile", func(p *policy.Policy, opt policy.SPOOptions, b *bytes.Buffer) error { return p.WriteSPO(b, opt) }},
}

// exportCmd holds export's flags.
type exportCmd struct {
	policyFlags
	arch   archFlag
	to     string
	output string
	spo    policy.SPOOptions
}

func exportCommand() *cobra.Command {
	var c exportCmd
	cmd := &cobra.Command{
		Use:   "export POLICY --to oci|spo",
		Short: "Export a policy for container runtimes or Kubernetes",
		Long: `Export a policy for container runtimes or Kubernetes.

--to oci writes an OCI seccomp profile: the linux.seccomp object of an OCI
bundle's config.json for runc and crun, the file docker run and podman run
take as --security-opt seccomp=FILE, and a Kubernetes localhost profile for
containerd and CRI-O.

--to spo writes a SeccompProfile resource of the Kubernetes Security
Profiles Operator (security-profiles-operator.x-k8s.io/v1beta1), for
kubectl apply. --name sets metadata.name (default: the policy file's name
without its extension, in lowercase letters, digits and dashes) and
--namespace metadata.namespace (default: none, kubectl's context decides).
The resource has no defaultErrnoRet: a default errno other than EPERM is
refused, as are errno(0) and argument values of 2^63 and more.

A Docker profile's conditional entries (includes, excludes) are resolved
for the container and host that --caps and --kernel describe: give the
capabilities the container will have. --arch replaces the policy's ABIs.
The output depends only on what the policy means and the names given.
Compartments cannot be expressed in these formats: the rules, which allow
what every compartment may do, are exported, with a warning.`,
		Example: `  syscell export policy.toml --to oci -o seccomp.json
  docker run --security-opt seccomp=seccomp.json IMAGE
  syscell export policy.toml --to spo --name nginx --namespace web | kubectl apply -f -`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) },
	}
	c.policyFlags.register(cmd)
	c.arch.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&c.to, "to", "", "output format: oci or spo")
	fs.StringVarP(&c.output, "output", "o", "", "write the profile to `FILE` instead of standard output")
	fs.StringVar(&c.spo.Name, "name", "", "metadata.name `NAME` of the SeccompProfile (--to spo; default: the policy file's name)")
	fs.StringVar(&c.spo.Namespace, "namespace", "", "metadata.namespace `NS` of the SeccompProfile (--to spo; default: none)")
	return cmd
}

func (c *exportCmd) run(cmd *cobra.Command, path string) error {
	exp, ok := exporters[c.to]
	if !ok {
		return inputErrorf("--to: want oci or spo, not %q", c.to)
	}
	if c.to != "spo" && (cmd.Flags().Changed("name") || cmd.Flags().Changed("namespace")) {
		return inputErrorf("--name and --namespace name a SeccompProfile: use them with --to spo")
	}
	p, err := c.arch.loadFor(cmd, &c.policyFlags, path)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	// Writing to memory cannot fail, so an error is something the policy
	// says that the format cannot: bad input.
	if err := exp.write(p, c.spo, &b); err != nil {
		return badInput{err}
	}
	warnCompartments(cmd, p, exp.what)
	return writeOutput(cmd, c.output, b.Bytes())
}

// warnCompartments tells that p's compartments were left out of a profile
// that cannot express them, at the first one.
func warnCompartments(cmd *cobra.Command, p *policy.Policy, what string) {
	if len(p.Compartments) == 0 {
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "syscell: warning: %s: compartments not exported: %s cannot tell which library makes a call, so the container gets the rules, which allow every compartment's syscalls\n",
		p.Compartments[0].Pos, what)
}
