// Package integration runs syscell with real software: OCI bundles whose
// seccomp profile comes from the syscell binary's export command, run
// with runc and with crun; and Debian's servers under the per-library
// policies recorded for them (servers_test.go). It holds tests only,
// which need root.
package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"gopkg.in/yaml.v3"

	"github.com/syscell/syscell/policy"
)

// Every command the tests run has a deadline, so that a hung runtime fails
// the test instead of stalling the suite. Building syscell may compile
// everything from scratch.
const (
	runTimeout   = time.Minute
	buildTimeout = 5 * time.Minute
)

// cases are the policies exported for the containers, by the format
// they travel in, and the file that says what the probe must print.
var cases = []struct {
	name   string
	policy string
	to     string // syscell export --to
	want   string
}{
	{"allow", "testdata/allow.toml", "oci", "testdata/allow.want"},
	{"deny", "testdata/deny.toml", "oci", "testdata/deny.want"},
	{"deny-spo", "testdata/deny.toml", "spo", "testdata/deny.want"},
	{"docker", "../policy/testdata/docker-default.json", "oci", "testdata/docker.want"},
	{"docker-spo", "../policy/testdata/docker-default.json", "spo", "testdata/docker.want"},
}

// runtimes run every case.
var runtimes = []string{"runc", "crun"}

// TestOCIRuntimes runs the probe in a container under each case's policy,
// exported by syscell, with each runtime: the calls the policy allows
// work, the ones it denies fail with its errno, and a denied mkdir leaves
// no directory behind.
func TestOCIRuntimes(t *testing.T) {
	requireRoot(t)
	built := setUp(t)
	for _, name := range runtimes {
		t.Run(name, func(t *testing.T) {
			rt := newRuntime(t, name)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					want := string(readFile(t, c.want))
					seccomp := built.export(t, c.policy, c.to)
					got, rootfs := rt.runProbe(t, built.probe, calls(want), seccomp)
					if got != want {
						t.Errorf("%s: the probe printed\n%s\nwant (%s)\n%s", name, got, c.want, want)
					}
					checkMkdir(t, rootfs, want)
				})
			}
		})
	}
}

// tools are the programs the tests build: syscell and the probe.
type tools struct {
	syscell string
	probe   string
}

// setUp builds syscell's command line from this module with go build, and
// the probe with gcc.
func setUp(t *testing.T) tools {
	gcc := need(t, "gcc", "gcc")
	needStaticLibc(t, gcc)
	dir := t.TempDir()
	tl := tools{syscell: filepath.Join(dir, "syscell"), probe: filepath.Join(dir, "probe")}
	goTool := need(t, "go", "Go")
	execute(t, buildTimeout, exec.Command(goTool, "build", "-o", tl.syscell, "github.com/syscell/syscell/cmd/syscell"))
	execute(t, buildTimeout, exec.Command(gcc, "-static", "-O2", "-Wall", "-Werror", "-o", tl.probe, "testdata/probe.c"))
	return tl
}

// export runs syscell export and returns the profile a runtime gets. A
// SeccompProfile's spec is what the operator writes out as JSON for the
// runtime; both formats are decoded strictly, so that a misspelt field
// fails here rather than be ignored by a runtime.
func (tl tools) export(t *testing.T, policyFile, to string) *specs.LinuxSeccomp {
	t.Helper()
	out := execute(t, runTimeout, exec.Command(tl.syscell, "export", policyFile, "--to", to))
	if to == "spo" {
		var res struct {
			Spec map[string]any `yaml:"spec"`
		}
		if err := yaml.Unmarshal(out, &res); err != nil {
			t.Fatalf("decode the SeccompProfile: %v\n%s", err, out)
		}
		var err error
		if out, err = json.Marshal(res.Spec); err != nil {
			t.Fatal(err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var s specs.LinuxSeccomp
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("decode the exported profile: %v\n%s", err, out)
	}
	return &s
}

// ociRuntime is runc or crun, with its state in a directory of the test's.
type ociRuntime struct {
	name  string
	path  string
	state string
	// ownMountNS runs the runtime in a mount namespace of its own, without
	// the host's cgroup v2 mount (see newRuntime).
	ownMountNS bool
}

// newRuntime finds a runtime. crun 1.8 refuses to start containers on
// hosts with hybrid cgroups (v1 controllers, and v2 mounted at
// /sys/fs/cgroup/unified) when the v2 hierarchy holds a controller, as on
// the VMs syscell is tested on, whatever its cgroup manager; without that
// mount, it sees plain v1, as runc does. Seccomp does not depend on
// cgroups, and the host is left as it is.
func newRuntime(t *testing.T, name string) *ociRuntime {
	rt := &ociRuntime{name: name, path: need(t, name, name), state: t.TempDir()}
	rt.ownMountNS = name == "crun" && crunNeedsOwnMountNS(t)
	return rt
}

// crunNeedsOwnMountNS says whether crun must run without the host's
// cgroup version 2 mount (see newRuntime).
func crunNeedsOwnMountNS(t *testing.T) bool {
	controllers, err := os.ReadFile("/sys/fs/cgroup/unified/cgroup.controllers")
	if err != nil || len(bytes.TrimSpace(controllers)) == 0 {
		return false
	}
	t.Logf("crun runs without /sys/fs/cgroup/unified, which holds the controllers %q: crun refuses hybrid cgroups then", bytes.TrimSpace(controllers))
	return true
}

// command runs the runtime with args, after its global flags.
func (r *ociRuntime) command(args ...string) *exec.Cmd {
	args = append([]string{"--root", r.state}, args...)
	if !r.ownMountNS {
		return exec.Command(r.path, args...)
	}
	// Go makes the new mount namespace's mounts private, so the unmount
	// stays in it.
	sh := append([]string{"-c", `umount /sys/fs/cgroup/unified && exec "$0" "$@"`, r.path}, args...)
	cmd := exec.Command("/bin/sh", sh...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	return cmd
}

// runProbe runs the probe with args in a fresh container under seccomp,
// and returns what it printed and the container's root filesystem.
func (r *ociRuntime) runProbe(t *testing.T, probe string, args []string, seccomp *specs.LinuxSeccomp) (string, string) {
	t.Helper()
	bundle := t.TempDir()
	rootfs := filepath.Join(bundle, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, probe, filepath.Join(rootfs, "probe"), 0o755)
	config, err := json.MarshalIndent(containerSpec(args, seccomp), "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	id := containerID(t, r.name)
	t.Cleanup(func() { r.remove(t, id) })
	out := execute(t, runTimeout, r.command("run", "--bundle", bundle, id))
	return string(out), rootfs
}

// ociVersion is what the bundle declares: crun 1.8 (Debian 12's) refuses
// any version but 1.0.x, though it reads later fields such as
// defaultErrnoRet, as runc 1.1 does.
const ociVersion = "1.0.2"

// containerSpec is the smallest container runc and crun run as root: the
// probe as its only process, with Docker's default capabilities (the
// export resolves Docker's profile for them), no_new_privs as Docker sets
// it, its own namespaces, /proc, which the runtimes' own setup uses, and a
// tmpfs /dev for the device nodes they make (crun needs the directory).
// The root filesystem is writable, so that only seccomp can stop mkdir.
func containerSpec(args []string, seccomp *specs.LinuxSeccomp) *specs.Spec {
	caps := policy.DefaultCaps()
	return &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{
			Args:            append([]string{"/probe"}, args...),
			Cwd:             "/",
			Env:             []string{"PATH=/"},
			NoNewPrivileges: true,
			Capabilities:    &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
		},
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: "probe",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755", "size=64k"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.MountNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.NetworkNamespace},
			},
			Seccomp: seccomp,
		},
	}
}

// containerID is unique on the machine, since runtimes name cgroups after
// it, and says which test made it.
func containerID(t *testing.T, runtime string) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("syscell-test-%s-%d-%s", runtime, os.Getpid(), hex.EncodeToString(b))
}

// remove deletes the container, which run normally has deleted already,
// and fails the test if the runtime still keeps its state.
func (r *ociRuntime) remove(t *testing.T, id string) {
	cmd := r.command("delete", "--force", id)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	out, err := commandContext(ctx, cmd).CombinedOutput()
	if _, statErr := os.Stat(filepath.Join(r.state, id)); statErr == nil {
		t.Errorf("%s left container %s behind; delete --force: %v\n%s", r.name, id, err, out)
	}
}

// calls lists the calls a want file names, in its order.
func calls(want string) []string {
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		name, _, _ := strings.Cut(line, ":")
		names = append(names, name)
	}
	return names
}

// checkMkdir holds the probe to the kernel's account: /x exists in the
// root filesystem exactly when mkdir is expected to have worked.
func checkMkdir(t *testing.T, rootfs, want string) {
	t.Helper()
	var expected string
	for _, line := range strings.Split(want, "\n") {
		if result, ok := strings.CutPrefix(line, "mkdir: "); ok {
			expected = result
		}
	}
	if expected == "" {
		return
	}
	_, err := os.Stat(filepath.Join(rootfs, "x"))
	switch {
	case expected == "ok" && err != nil:
		t.Errorf("mkdir worked, but /x is not there: %v", err)
	case expected != "ok" && err == nil:
		t.Errorf("mkdir was denied (%s), but /x is there", expected)
	}
}

// execute runs cmd within timeout and returns its standard output; what it
// says on standard error is logged, and failing fails the test.
func execute(t *testing.T, timeout time.Duration, cmd *exec.Cmd) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd = commandContext(ctx, cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("%s said:\n%s", filepath.Base(cmd.Path), stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("%s: %v (after %v)\nstdout:\n%s", strings.Join(cmd.Args, " "), err, time.Since(start).Round(time.Millisecond), stdout.Bytes())
	}
	return stdout.Bytes()
}

// commandContext gives a prepared command a deadline: killed when ctx
// ends, and no longer waited for than WaitDelay after.
func commandContext(ctx context.Context, cmd *exec.Cmd) *exec.Cmd {
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.SysProcAttr, c.Env, c.Dir, c.Stdin = cmd.SysProcAttr, cmd.Env, cmd.Dir, cmd.Stdin
	c.WaitDelay = 5 * time.Second
	return c
}

// inCI reports whether the tests run in CI, where scripts/install-deps.sh
// has installed every tool: a missing one is then a failure, not a reason
// to skip.
func inCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// requireRoot skips, loudly, unless the test runs as root, which runc and
// crun need to create namespaces and cgroups; CI runs as root.
func requireRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		return
	}
	if inCI() {
		t.Fatalf("running as uid %d in CI, which runs the tests as root", os.Geteuid())
	}
	t.Skipf("SKIPPED: running containers needs root, and this is uid %d", os.Geteuid())
}

// need finds a program on PATH, or in /usr/sbin, where Debian puts runc
// and which not every PATH holds.
func need(t *testing.T, prog, pkg string) string {
	path, err := exec.LookPath(prog)
	if err == nil {
		return path
	}
	if sbin, sbinErr := exec.LookPath(filepath.Join("/usr/sbin", prog)); sbinErr == nil {
		return sbin
	}
	if inCI() {
		t.Fatalf("%s: %v; scripts/install-deps.sh installs %s", prog, err, pkg)
	}
	t.Skipf("SKIPPED: %s: %v; install %s (make deps)", prog, err, pkg)
	return ""
}

// needStaticLibc checks that gcc can link statically: gcc prints the bare
// name of a library it cannot find.
func needStaticLibc(t *testing.T, gcc string) {
	out := execute(t, runTimeout, exec.Command(gcc, "-print-file-name=libc.a"))
	if filepath.IsAbs(strings.TrimSpace(string(out))) {
		return
	}
	if inCI() {
		t.Fatal("gcc finds no libc.a; scripts/install-deps.sh installs libc6-dev")
	}
	t.Skip("SKIPPED: gcc finds no libc.a, needed for the static probe; install libc6-dev (make deps)")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), perm); err != nil {
		t.Fatal(err)
	}
}
