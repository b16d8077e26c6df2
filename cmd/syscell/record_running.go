package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/internal/cgroups"
	"github.com/syscell/syscell/record"
	"github.com/syscell/syscell/supervisor"
)

// running names what record attaches to instead of starting a command.
type running struct {
	cgroup    string
	pid       int
	container string
	dir       string
}

func (r *running) register(fs *pflag.FlagSet) {
	fs.StringVar(&r.cgroup, "cgroup", "", "record the processes of the cgroup at `DIR` (and below)")
	fs.IntVar(&r.pid, "pid", 0, "record the processes of the cgroup of process `PID`")
	fs.StringVar(&r.container, "container", "", "record the container `ID` syscell's OCI runtime started")
	fs.StringVar(&r.dir, "dir", supervisor.DefaultDir, "the OCI runtime's state `DIR`ectory, for --container")
}

// target names the flag that says what to record, "" for none.
func (r *running) target() string {
	switch {
	case r.cgroup != "":
		return "--cgroup"
	case r.pid != 0:
		return "--pid"
	case r.container != "":
		return "--container"
	}
	return ""
}

// cgroupDir is the directory of the cgroup to record.
func (r *running) cgroupDir() (string, error) {
	n := 0
	for _, set := range []bool{r.cgroup != "", r.pid != 0, r.container != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return "", inputErrorf("--cgroup, --pid and --container each name what to record: give one")
	}
	if r.cgroup != "" {
		if _, err := os.Stat(filepath.Join(r.cgroup, "cgroup.procs")); err != nil {
			return "", inputErrorf("--cgroup: %s is no cgroup: %w", r.cgroup, err)
		}
		return r.cgroup, nil
	}
	pid := r.pid
	if r.container != "" {
		var err error
		if pid, err = containerPid(r.dir, r.container); err != nil {
			return "", err
		}
	}
	dir, err := cgroups.Dir(pid)
	if err != nil {
		return "", inputErrorf("the cgroup of process %d: %w", pid, err)
	}
	return dir, nil
}

// containerPid is the init process of a container syscell's OCI runtime
// registered.
func containerPid(dir, id string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "runtime", filepath.Base(id)+".json"))
	if err != nil {
		return 0, inputErrorf("--container %s: not a container syscell's OCI runtime created under %s: %w", id, dir, err)
	}
	var rec struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Pid == 0 {
		return 0, fmt.Errorf("--container %s: no init process in its record: %v", id, err)
	}
	return rec.Pid, nil
}

// recordRunning records the processes of a cgroup until they have all
// exited or a Ctrl-C (or SIGTERM) ends the recording, and writes it with
// the earlier recordings merged.
func (c *recordCmd) recordRunning(cmd *cobra.Command, earlier []*record.Recording) error {
	dir, err := c.running.cgroupDir()
	if err != nil {
		return err
	}
	source := "the recording of " + dir
	if err := c.checkMerges(cmd, source, earlier); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGINT, unix.SIGTERM)
	defer stop()
	opts := record.AttachOptions{Options: c.options(cmd)}
	a, err := record.Attach(record.CgroupTasks(dir), opts)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("record needs root (CAP_BPF and CAP_PERFMON) to load its eBPF program: %w", err)
		}
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "syscell: recording the processes of %s until they exit (Ctrl-C ends the recording)\n", dir)
	rec, err := a.Wait(ctx)
	if err != nil {
		return err
	}
	rec.Source = source
	fmt.Fprint(cmd.ErrOrStderr(), "syscell: "+rec.Summary())
	if rec, err = c.withEarlier(cmd, rec, earlier); err != nil {
		return err
	}
	return c.write(cmd, rec)
}
