package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseMount(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Hierarchy
		ok   bool
	}{
		{"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu", Hierarchy{Dir: "/sys/fs/cgroup/cpu", Version: 1, Controllers: []string{"cpu"}}, true},
		{"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd", Hierarchy{Dir: "/sys/fs/cgroup/systemd", Version: 1, Controllers: []string{"name=systemd"}}, true},
		{"33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct", Hierarchy{Dir: "/sys/fs/cgroup/cpu,cpuacct", Version: 1, Controllers: []string{"cpu", "cpuacct"}}, true},
		{"41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate", Hierarchy{Dir: "/sys/fs/cgroup/unified", Version: 2}, true},
		{"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755", Hierarchy{}, false},
		// A cgroup mounted from below its root (a container's view) is
		// not a hierarchy's root.
		{"50 49 0:29 /docker/abc /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu", Hierarchy{}, false},
		{"garbage", Hierarchy{}, false},
	} {
		got, ok := parseMount(tc.line)
		if ok != tc.ok || got.Dir != tc.want.Dir || got.Version != tc.want.Version || !slices.Equal(got.Controllers, tc.want.Controllers) {
			t.Errorf("parseMount(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestDir finds this process's own cgroup, which holds it.
func TestDir(t *testing.T) {
	dir, err := Dir(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(data)), strconv.Itoa(os.Getpid())) {
		t.Errorf("%s/cgroup.procs does not hold this process (%d):\n%s", dir, os.Getpid(), data)
	}
}
