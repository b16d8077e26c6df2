package ociruntime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/supervisor"
)

func TestUseOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        *supervisor.Use
		err         string
	}{
		{"none", nil, nil, ""},
		{"others", map[string]string{"org.opencontainers.image.title": "x"}, nil, ""},
		{"policy", map[string]string{"syscell.policy": "nginx"}, &supervisor.Use{Policy: "nginx"}, ""},
		{"mode", map[string]string{"syscell.policy": "nginx", "syscell.mode": "audit"}, &supervisor.Use{Policy: "nginx", Mode: "audit"}, ""},
		{"record", map[string]string{"syscell.record": "web"}, &supervisor.Use{Record: "web"}, ""},
		{"both", map[string]string{"syscell.record": "web", "syscell.policy": "web"}, nil, "not both"},
		{"mode alone", map[string]string{"syscell.mode": "audit"}, nil, "names no policy"},
		// A pod's annotations, in each of its containers but the sandbox.
		{"containerd sandbox", map[string]string{"syscell.policy": "web", "io.kubernetes.cri.container-type": "sandbox"}, nil, ""},
		{"cri-o sandbox", map[string]string{"syscell.policy": "web", "io.kubernetes.cri-o.ContainerType": "sandbox"}, nil, ""},
		{"containerd container", map[string]string{"syscell.policy": "web", "io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.container-name": "nginx"}, &supervisor.Use{Policy: "web"}, ""},
		// One container's own annotation wins over the pod's.
		{"per container", map[string]string{"syscell.policy": "web", "syscell.policy/nginx": "nginx", "io.kubernetes.container.name": "nginx"}, &supervisor.Use{Policy: "nginx"}, ""},
		{"other container", map[string]string{"syscell.policy/nginx": "nginx", "io.kubernetes.container.name": "sidecar"}, nil, ""},
	} {
		use, err := useOf(&specs.Spec{Annotations: tc.annotations})
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && (use == nil) != (tc.want == nil) || use != nil && tc.want != nil && *use != *tc.want:
			t.Errorf("%s: %+v, want %+v", tc.name, use, tc.want)
		}
	}
}

// TestAddEnforcement adds the environment and the shared directory, and
// leaves the container's own seccomp profile, the outer bound, as it is.
func TestAddEnforcement(t *testing.T) {
	r := &runtime{dirs: supervisor.Dirs{State: "/run/syscell"}}
	seccomp := &specs.LinuxSeccomp{DefaultAction: specs.ActErrno}
	spec := &specs.Spec{
		Process: &specs.Process{Args: []string{"nginx"}, Env: []string{"PATH=/bin"}},
		Mounts:  []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux:   &specs.Linux{Seccomp: seccomp},
	}
	env := []string{"PATH=/bin", "LD_AUDIT=" + supervisor.ContainerLibrary}
	if err := r.addEnforcement(spec, env); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Process.Env, env) {
		t.Errorf("env %q, want %q", spec.Process.Env, env)
	}
	want := specs.Mount{Destination: "/run/syscell", Type: "bind", Source: "/run/syscell/shared", Options: []string{"rbind", "ro", "nosuid", "nodev"}}
	if len(spec.Mounts) != 2 || spec.Mounts[1].Destination != want.Destination || spec.Mounts[1].Source != want.Source || !slices.Equal(spec.Mounts[1].Options, want.Options) {
		t.Errorf("mounts %+v, want /proc and %+v", spec.Mounts, want)
	}
	if spec.Linux.Seccomp != seccomp || seccomp.DefaultAction != specs.ActErrno {
		t.Error("the container's seccomp profile changed")
	}
	if err := r.addEnforcement(spec, env); err != nil || len(spec.Mounts) != 2 {
		t.Errorf("the additions made again: %v, mounts %+v", err, spec.Mounts)
	}
	spec.Mounts[1].Source = "/elsewhere"
	if err := r.addEnforcement(spec, env); err == nil || !strings.Contains(err.Error(), "mounts /run/syscell already") {
		t.Errorf("a mount of the container's own at /run/syscell: %v", err)
	}
}

// TestCheckProgram finds the container's program as the delegate does,
// by its path or on its PATH, and refuses what the loader would run
// without the audit library.
func TestCheckProgram(t *testing.T) {
	root := t.TempDir()
	for name, from := range map[string]string{"usr/bin/true": "/usr/bin/true", "usr/sbin/ldconfig": "/usr/sbin/ldconfig", "srv/app": "/usr/bin/true"} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := []string{"PATH=/usr/local/bin:/usr/sbin:/usr/bin"}
	for _, tc := range []struct {
		args []string
		cwd  string
		err  string
	}{
		{[]string{"true"}, "/", ""},
		{[]string{"/usr/bin/true"}, "/", ""},
		{[]string{"./app"}, "/srv", ""},
		{[]string{"ldconfig"}, "/", "statically linked"},
		{[]string{"nosuch"}, "/", "on none of its PATH's directories"},
		{[]string{"/srv/nosuch"}, "/", "no such file"},
	} {
		err := checkProgram(root, "", &specs.Process{Args: tc.args, Env: path, Cwd: tc.cwd, NoNewPrivileges: true})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
		}
	}
}
