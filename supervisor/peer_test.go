package supervisor

import (
	"strings"
	"testing"
)

// TestHolds decides which registered container a process belongs to:
// the same PID namespace, and its cgroups at or below the container's
// in every hierarchy the container has.
func TestHolds(t *testing.T) {
	c := &Container{Pid: 10, Namespace: 4026532180, Cgroups: []string{
		"8:pids:/libpod_parent/libpod-abc",
		"1:name=systemd:/libpod_parent/libpod-abc",
		"0::/libpod_parent/libpod-abc",
	}}
	for _, tc := range []struct {
		name string
		p    peer
		want bool
	}{
		{"its init", peer{namespace: 4026532180, cgroups: c.Cgroups}, true},
		{"below", peer{namespace: 4026532180, cgroups: []string{
			"8:pids:/libpod_parent/libpod-abc/sub", "1:name=systemd:/libpod_parent/libpod-abc", "0::/libpod_parent/libpod-abc/sub"}}, true},
		{"another namespace", peer{namespace: 4026532181, cgroups: c.Cgroups}, false},
		{"a sibling", peer{namespace: 4026532180, cgroups: []string{
			"8:pids:/libpod_parent/libpod-abcd", "1:name=systemd:/libpod_parent/libpod-abc", "0::/libpod_parent/libpod-abc"}}, false},
		{"above", peer{namespace: 4026532180, cgroups: []string{
			"8:pids:/libpod_parent", "1:name=systemd:/libpod_parent/libpod-abc", "0::/libpod_parent/libpod-abc"}}, false},
		{"a hierarchy missing", peer{namespace: 4026532180, cgroups: []string{"0::/libpod_parent/libpod-abc"}}, false},
	} {
		if got := c.holds(&tc.p); got != tc.want {
			t.Errorf("%s: holds %v, want %v", tc.name, got, tc.want)
		}
	}
	if (&Container{Namespace: 4026532180}).holds(&peer{namespace: 4026532180}) {
		t.Error("a container not attached yet holds a process")
	}
	// Paths may hold colons (systemd's cgroup names).
	colon := &Container{Pid: 1, Namespace: 1, Cgroups: []string{"0::/kubepods.slice/cri-containerd:abc.scope"}}
	if !colon.holds(&peer{namespace: 1, cgroups: []string{"0::/kubepods.slice/cri-containerd:abc.scope"}}) {
		t.Error("a path with a colon")
	}
}

func TestCheckName(t *testing.T) {
	for name, ok := range map[string]bool{
		"nginx": true, "nginx.toml": true, "web_1-a": true, "a": true,
		strings.Repeat("a", 251): true, strings.Repeat("a", 252): false,
		"": false, "../etc/shadow": false, "/etc/shadow": false, "a/b": false, ".hidden": false, "a b": false,
	} {
		if err := checkName("policy", name); (err == nil) != ok {
			t.Errorf("checkName(%q) = %v", name, err)
		}
	}
}
