package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/supervisor"
)

type superviseCmd struct {
	dirs         supervisor.Dirs
	library      string
	ownCgroup    bool
	startTimeout time.Duration
}

func superviseCommand() *cobra.Command {
	c := superviseCmd{dirs: supervisor.DefaultDirs()}
	cmd := &cobra.Command{
		Use:   "supervise [flags]",
		Short: "Supervise the per-library filters of containers (the OCI runtime's supervisor)",
		Long: `Run the supervisor of the containers syscell's OCI runtime (syscell oci,
syscell-runtime) starts under per-library policies: one per machine.

Programs in those containers connect to DIR/shared/supervisor.sock, which
the runtime mounts into them with the audit library; the supervisor knows
each by its PID namespace and cgroups, which the runtime registered at
create through DIR/control.sock (root only), and supervises it under its
container's policy, as syscell run does. Policies are read by name from
--policy-dir at create; recordings are written to --record-dir.

If the supervisor stops, the calls it decides fail with ENOSYS in every
container it served, and containers created under a policy cannot start
until it runs again: run it as a service (deploy/ has a systemd unit and
a Kubernetes DaemonSet). The runtime starts one on first use otherwise.
A container's program that has not connected --start-timeout after the
runtime started it runs without its filter (its loader did not load the
audit library) and is killed. It runs until SIGTERM or SIGINT.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVar(&c.dirs.State, "dir", c.dirs.State, "the state `DIR`ectory: control socket, registrations, the shared directory")
	fs.StringVar(&c.dirs.PolicyDir, "policy-dir", c.dirs.PolicyDir, "where policies are read from, by name")
	fs.StringVar(&c.dirs.RecordDir, "record-dir", c.dirs.RecordDir, "where recordings are written")
	fs.StringVar(&c.library, "library", "", "the audit library to publish (default: "+cell.LibraryName+" next to syscell)")
	fs.BoolVar(&c.ownCgroup, "own-cgroup", false, "move into cgroups of its own (the runtime starts it so)")
	fs.DurationVar(&c.startTimeout, "start-timeout", supervisor.DefaultStartTimeout, "how long a container's program may take to connect once started, before it is killed")
	return cmd
}

func (c *superviseCmd) run(cmd *cobra.Command) error {
	if c.library == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.library = cell.LibraryPath(exe)
	}
	if c.ownCgroup {
		if err := supervisor.OwnCgroups("syscell"); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "syscell: warning: cgroups of its own: %v\n", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	defer stop()
	return supervisor.Run(ctx, supervisor.Config{Dirs: c.dirs, Library: c.library, Log: cmd.ErrOrStderr(), StartTimeout: c.startTimeout})
}
