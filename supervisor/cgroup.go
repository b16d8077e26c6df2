package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/syscell/syscell/internal/cgroups"
)

// OwnCgroups moves the calling process into a cgroup named name at the
// root of every cgroup hierarchy mounted (version 1 controllers, and
// version 2), so that removing the cgroup of whoever started it (a
// container engine's, removed with its container) does not end it. A
// supervisor that systemd or Kubernetes runs has cgroups of its own
// already.
func OwnCgroups(name string) error {
	mounts, err := cgroups.Mounts()
	if err != nil {
		return err
	}
	var errs []error
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, m := range mounts {
		dir := filepath.Join(m.Dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		// A version 1 cpuset cgroup takes no process before it has CPUs
		// and memory nodes: those of the root.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(m.Dir, f)); err == nil {
				os.WriteFile(filepath.Join(dir, f), v, 0o644)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
