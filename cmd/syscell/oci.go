package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/ociruntime"
)

// runtimeName is the name under which the syscell binary is an OCI
// runtime and nothing else: a link to it that podman --runtime, Docker's
// "runtimes" and containerd's BinaryName can name, since they pass the
// OCI runtime's arguments and no others.
const runtimeName = "syscell-runtime"

// maybeRunRuntime runs the OCI runtime, and exits, when the binary was
// called as syscell-runtime.
func maybeRunRuntime() {
	if filepath.Base(os.Args[0]) == runtimeName {
		os.Exit(ociruntime.Main(os.Args[1:], os.Stderr))
	}
}

func ociCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "oci [GLOBAL FLAGS] COMMAND [ARGS...]",
		Short: "Be an OCI runtime (as runc is) that runs containers under per-library policies",
		Long: `Take the OCI runtime command line (create, start, state, kill, delete, run,
exec, features, ...) and hand each command to runc or crun (the delegate),
adding per-library enforcement where a container's annotations ask for it:

  syscell.policy=NAME   run the container's programs under the compartments
                        of policy NAME, a file of the supervisor's policy
                        directory (/etc/syscell/policies: NAME, NAME.toml
                        or NAME.json)
  syscell.mode=MODE     enforce (the default), audit or complain
  syscell.record=NAME   record the container; the supervisor writes
                        NAME/ID.toml to its recording directory
                        (/var/lib/syscell/recordings) when it exits

A pod's annotation applies to each of its containers (not its sandbox);
syscell.policy/CONTAINER applies to one. A container without them runs
exactly as under the delegate. The supervisor (syscell supervise) is
started on first use if none runs.

Container engines pass a runtime's arguments and no others: link the
binary as syscell-runtime, which is this command (podman --runtime
/usr/local/bin/syscell-runtime). syscell's own global flags:
--syscell-delegate RUNTIME (runc or crun, a name or a path; default: the
first installed), --syscell-dir DIR (the supervisor's state directory,
/run/syscell), --syscell-policy-dir and --syscell-record-dir (for a
supervisor the runtime starts). See docs/CONTAINERS.md.`,
		DisableFlagParsing: true,
		SilenceErrors:      true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if status := ociruntime.Main(args, cmd.ErrOrStderr()); status != 0 {
				return exitStatus(status)
			}
			return nil
		},
	}
}
