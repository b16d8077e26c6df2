// Package hostbundle writes OCI bundles whose root filesystem is made of
// the host's own programs: its /usr (and, if asked, /etc) mounted
// read-only, with a few files of the caller's copied in, as an image
// would hold its program. syscell's container tests and benchmarks run
// Debian's servers and its fixtures this way, without images or a
// registry.
package hostbundle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/policy"
)

// Version is the runtime-spec version the bundles declare: crun 1.8
// (Debian 12's) refuses any but 1.0.x, though it reads later fields, as
// runc 1.1 does.
const Version = "1.0.2"

// Options describe a container.
type Options struct {
	// Args are its process's command line.
	Args        []string
	Annotations map[string]string
	// Files are copied into the root filesystem: the path in the
	// container, and the host file.
	Files map[string]string
	// Tmp is the host directory mounted at /tmp, writable.
	Tmp string
	// HostNet shares the host's network; HostEtc mounts its /etc,
	// read-only (users, the servers' configuration).
	HostNet, HostEtc bool
}

// Write makes a bundle in dir: dir/rootfs and dir/config.json. The
// container has Docker's default capabilities, no_new_privs, its own
// namespaces (PID, mount, IPC, UTS, and network unless HostNet), /proc,
// a small /dev, the host's /usr read-only (the root's /bin, /lib, /lib64
// and /sbin lead there, as on Debian), and /tmp.
func Write(dir string, o Options) error {
	if err := WriteRootfs(filepath.Join(dir, "rootfs"), o.Files); err != nil {
		return err
	}
	data, err := json.MarshalIndent(Spec(o), "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644)
}

// WriteRootfs makes a root filesystem at rootfs: the places where /usr,
// /tmp, /proc, /dev, /etc and /run are mounted, /bin, /lib, /lib64 and
// /sbin leading into /usr, and files (the path in the container, and the
// host file) copied in.
func WriteRootfs(rootfs string, files map[string]string) error {
	for _, d := range []string{"usr", "tmp", "proc", "dev", "etc", "run"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
	}
	for link, to := range map[string]string{"lib": "usr/lib", "lib64": "usr/lib64", "bin": "usr/bin", "sbin": "usr/sbin"} {
		if err := os.Symlink(to, filepath.Join(rootfs, link)); err != nil {
			return err
		}
	}
	for in, from := range files {
		if err := copyFile(from, filepath.Join(rootfs, in)); err != nil {
			return err
		}
	}
	return nil
}

// Spec is the configuration of the container o describes.
func Spec(o Options) *specs.Spec {
	caps := policy.DefaultCaps()
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755", "size=64k"}},
		{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
	}
	if o.Tmp != "" {
		mounts = append(mounts, specs.Mount{Destination: "/tmp", Type: "bind", Source: o.Tmp, Options: []string{"rbind", "rw"}})
	}
	if o.HostEtc {
		mounts = append(mounts, specs.Mount{Destination: "/etc", Type: "bind", Source: "/etc", Options: []string{"rbind", "ro"}})
	}
	namespaces := []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}}
	if !o.HostNet {
		namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	return &specs.Spec{
		Version: Version,
		Process: &specs.Process{
			Args:            o.Args,
			Cwd:             "/",
			Env:             []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
			NoNewPrivileges: true,
			Capabilities:    &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
		},
		Root:        &specs.Root{Path: "rootfs"},
		Hostname:    "hostbundle",
		Mounts:      mounts,
		Annotations: o.Annotations,
		Linux:       &specs.Linux{Namespaces: namespaces},
	}
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	st, err := os.Stat(from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
		return fmt.Errorf("hostbundle: %w", err)
	}
	return nil
}
