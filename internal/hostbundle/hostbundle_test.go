package hostbundle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestWrite writes a bundle and reads it back as a runtime would,
// strictly: the files copied, the host's /usr and /etc mounted
// read-only, the network namespace only where asked.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{Args: []string{"/opt/prog"}, Files: map[string]string{"/opt/prog": file}, Tmp: "/tmp/x", HostEtc: true,
		Annotations: map[string]string{"syscell.policy": "p"}}
	if err := Write(dir, o); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "rootfs/opt/prog"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the copied program: %v %v", st, err)
	}
	if to, err := os.Readlink(filepath.Join(dir, "rootfs/lib64")); err != nil || to != "usr/lib64" {
		t.Errorf("lib64 -> %q (%v)", to, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var spec specs.Spec
	if err := dec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	var mounts []string
	for _, m := range spec.Mounts {
		mounts = append(mounts, m.Destination+":"+m.Source)
		if (m.Destination == "/usr" || m.Destination == "/etc") && !slices.Contains(m.Options, "ro") {
			t.Errorf("%s is writable", m.Destination)
		}
	}
	if want := []string{"/proc:proc", "/dev:tmpfs", "/usr:/usr", "/tmp:/tmp/x", "/etc:/etc"}; !slices.Equal(mounts, want) {
		t.Errorf("mounts %q, want %q", mounts, want)
	}
	if spec.Version != Version || spec.Annotations["syscell.policy"] != "p" || !slices.Equal(spec.Process.Args, o.Args) {
		t.Errorf("spec: %+v", spec)
	}
	hasNet := slices.ContainsFunc(spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
	if !hasNet || slices.ContainsFunc(Spec(Options{HostNet: true}).Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace }) {
		t.Error("the network namespace, where not HostNet, and only there")
	}
}
