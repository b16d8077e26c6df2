// Package cgroups finds cgroup hierarchies and the cgroups of processes,
// with version 1 controllers, version 2, or both (hybrid) mounted.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Hierarchy is a mounted cgroup hierarchy.
type Hierarchy struct {
	// Dir is where its root is mounted.
	Dir string
	// Version is 1 or 2; Controllers are a version 1 hierarchy's (with
	// a named one's "name=NAME").
	Version     int
	Controllers []string
}

// Mounts lists the hierarchies whose root this process sees mounted,
// from /proc/self/mountinfo.
func Mounts() ([]Hierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Hierarchy
	s := bufio.NewScanner(f)
	for s.Scan() {
		if h, ok := parseMount(s.Text()); ok {
			out = append(out, h)
		}
	}
	return out, s.Err()
}

// mountOptions are the options of a version 1 hierarchy's mount that
// name no controller.
var mountOptions = []string{"rw", "ro", "xattr", "noprefix", "clone_children", "cpuset_v2_mode", "favordynmods", "all", "none"}

// parseMount reads a line of mountinfo:
// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER.
func parseMount(line string) (Hierarchy, bool) {
	fields := strings.Fields(line)
	sep := slices.Index(fields, "-")
	if sep < 5 || sep+1 >= len(fields) || fields[3] != "/" {
		return Hierarchy{}, false
	}
	switch fields[sep+1] {
	case "cgroup2":
		return Hierarchy{Dir: fields[4], Version: 2}, true
	case "cgroup":
		h := Hierarchy{Dir: fields[4], Version: 1}
		if sep+3 < len(fields) {
			for _, o := range strings.Split(fields[sep+3], ",") {
				if !slices.Contains(mountOptions, o) && !strings.Contains(o, "=") || strings.HasPrefix(o, "name=") {
					h.Controllers = append(h.Controllers, o)
				}
			}
		}
		return h, true
	}
	return Hierarchy{}, false
}

// Dir is the directory of the cgroup process pid belongs to: in the
// version 2 hierarchy where one is mounted, else in the version 1
// hierarchy of the pids controller (or the first one mounted).
func Dir(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	mounts, err := Mounts()
	if err != nil {
		return "", err
	}
	var v1 []string
	for _, line := range strings.Fields(string(data)) {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, h := range mounts {
			switch {
			case f[0] == "0" && h.Version == 2:
				return filepath.Join(h.Dir, f[2]), nil
			case f[0] != "0" && h.Version == 1 && slices.Equal(h.Controllers, strings.Split(f[1], ",")):
				dir := filepath.Join(h.Dir, f[2])
				if slices.Contains(h.Controllers, "pids") {
					v1 = append([]string{dir}, v1...)
				} else {
					v1 = append(v1, dir)
				}
			}
		}
	}
	if len(v1) == 0 {
		return "", errors.New("no cgroup hierarchy of the process is mounted")
	}
	return v1[0], nil
}
