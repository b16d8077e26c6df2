package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
	"github.com/syscell/syscell/supervisor"
)

// podmanLimits are the limits podman gives its containers here: its
// default raises RLIMIT_NOFILE and RLIMIT_NPROC above this machine's
// hard limits, which root without CAP_SYS_RESOURCE cannot do (see
// /work/shared/ENVIRONMENT.md); lowering them needs no privilege.
var podmanLimits = []string{"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"}

// podman runs podman with syscell's runtime (its syscell-runtime link,
// as an engine names a runtime binary), delegating to runc or crun.
func (s *shim) podman(podman string, args ...string) *exec.Cmd {
	global := []string{"--runtime", s.tl.runtime,
		"--runtime-flag", "syscell-dir=" + s.dirs.State, "--runtime-flag", "syscell-delegate=" + s.delegate}
	return exec.Command(podman, append(global, args...)...)
}

// TestPodmanRuntime runs cellprobe with podman, from a root filesystem
// (--rootfs, no registry), with syscell's runtime over runc and over
// crun: recorded in the container (--annotation syscell.record), then run
// under the recording (--annotation syscell.policy), where libnomk.so may
// not make what libmaymk.so makes; and without annotations, as podman
// runs it with the plain runtime.
func TestPodmanRuntime(t *testing.T) {
	requireRoot(t)
	podman := need(t, "podman", "podman")
	tl := setUpCell(t)
	dirs := newSupervisorDirs(t)
	startSupervisor(t, tl, dirs)
	want := string(readFile(t, "testdata/cellprobe.want"))
	for _, name := range runtimes {
		t.Run(name, func(t *testing.T) {
			s := newShim(t, tl, dirs, name)
			rootfs := filepath.Join(t.TempDir(), "rootfs")
			if err := hostbundle.WriteRootfs(rootfs, tl.probeFiles()); err != nil {
				t.Fatal(err)
			}
			policyName := "podman-" + name
			run := func(tmp string, annotations []string, args ...string) *exec.Cmd {
				a := append([]string{"run", "--rm", "-i", "--network", "none", "-v", "/usr:/usr:ro", "-v", tmp + ":/tmp"}, podmanLimits...)
				a = append(append(a, annotations...), "--rootfs", rootfs, probeProg)
				return s.podman(podman, append(a, args...)...)
			}

			record := run(t.TempDir(), []string{"--annotation", "syscell.record=" + policyName}, "wait", "/tmp")
			record.Stdin = strings.NewReader("go\n")
			execute(t, runTimeout, record)
			copyFile(t, waitAnyRecording(t, dirs, policyName), filepath.Join(dirs.PolicyDir, policyName+".toml"), 0o644)

			tmp := t.TempDir()
			got := string(execute(t, runTimeout, run(tmp, []string{"--annotation", "syscell.policy=" + policyName}, "attack", "/tmp")))
			if got != want {
				t.Errorf("cellprobe attack under podman printed\n%s\nwant\n%s", got, want)
			}
			checkProbeFiles(t, tmp)

			tmp = t.TempDir()
			got = string(execute(t, runTimeout, run(tmp, nil, "attack", "/tmp")))
			if !strings.Contains(got, "nomk-mkdir: ok") {
				t.Errorf("cellprobe attack without annotations, where nothing stops libnomk.so, printed\n%s", got)
			}
		})
	}
}

// waitAnyRecording waits for the supervisor to write a recording name,
// of a container whose id the test does not know, and returns its path.
func waitAnyRecording(t *testing.T, dirs supervisor.Dirs, name string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		found, _ := filepath.Glob(filepath.Join(dirs.RecordDir, name, "*.toml"))
		if len(found) == 1 {
			return found[0]
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dirs.RecordDir, name))
	t.Fatalf("no recording %s after the container exited: %v", name, entries)
	return ""
}
