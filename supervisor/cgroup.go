package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OwnCgroups moves the calling process into a cgroup named name at the
// root of every cgroup hierarchy mounted (version 1 controllers, and
// version 2), so that removing the cgroup of whoever started it (a
// container engine's, removed with its container) does not end it. A
// supervisor that systemd or Kubernetes runs has cgroups of its own
// already.
func OwnCgroups(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		// A version 1 cpuset cgroup takes no process before it has CPUs
		// and memory nodes: those of the root.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(m, f)); err == nil {
				os.WriteFile(filepath.Join(dir, f), v, 0o644)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), pid, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupMounts lists where cgroup hierarchies are mounted, from
// /proc/self/mountinfo: the root of each, as this process sees it.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER
		fields := strings.Fields(s.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fs := fields[sep+1]; (fs == "cgroup" || fs == "cgroup2") && fields[3] == "/" {
			out = append(out, fields[4])
		}
	}
	return out, s.Err()
}
