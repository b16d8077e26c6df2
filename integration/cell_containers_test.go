package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/syscell/syscell/internal/hostbundle"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/supervisor"
)

// cellTools are what the container tests of per-library policies build:
// syscell with its audit library next to it, its syscell-runtime link,
// and cellprobe with its two libraries.
type cellTools struct {
	syscell string
	runtime string
	probe   string
}

// The fixture: testdata/cellprobe, and where its files lie in the
// containers' root.
const (
	probeDir  = "/opt/cellprobe"
	probeProg = probeDir + "/cellprobe"
)

var probeFiles = []string{"cellprobe", "libmaymk.so", "libnomk.so"}

func setUpCell(t *testing.T) cellTools {
	gcc := need(t, "gcc", "gcc")
	goTool := need(t, "go", "Go")
	dir := t.TempDir()
	tl := cellTools{syscell: filepath.Join(dir, "syscell"), runtime: filepath.Join(dir, "syscell-runtime"), probe: filepath.Join(dir, "probe")}
	execute(t, buildTimeout, exec.Command(goTool, "build", "-o", tl.syscell, "github.com/syscell/syscell/cmd/syscell"))
	if diag, err := cell.BuildLibrary("../audit", cell.LibraryPath(tl.syscell), gcc); err != nil || diag != "" {
		t.Fatalf("build the audit library: %v\n%s", err, diag)
	}
	if err := os.Symlink("syscell", tl.runtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tl.probe, 0o755); err != nil {
		t.Fatal(err)
	}
	flags := []string{"-O2", "-fomit-frame-pointer", "-Wall", "-Wextra", "-Werror"}
	src := "testdata/cellprobe/"
	for _, lib := range []string{"libmaymk", "libnomk"} {
		args := append(append([]string{}, flags...), "-shared", "-fPIC", "-o", filepath.Join(tl.probe, lib+".so"), src+lib+".c")
		execute(t, runTimeout, exec.Command(gcc, args...))
	}
	args := append(append([]string{}, flags...), "-o", filepath.Join(tl.probe, "cellprobe"), src+"main.c",
		"-L"+tl.probe, "-lmaymk", "-lnomk", "-Wl,-rpath,$ORIGIN")
	execute(t, runTimeout, exec.Command(gcc, args...))
	return tl
}

// supervisorProc is a syscell supervise the test started, with its
// directories in the test's.
type supervisorProc struct {
	tl   cellTools
	dirs supervisor.Dirs
	cmd  *exec.Cmd
	log  string
}

func newSupervisorDirs(t *testing.T) supervisor.Dirs {
	dir := t.TempDir()
	d := supervisor.Dirs{State: filepath.Join(dir, "state"), PolicyDir: filepath.Join(dir, "policies"), RecordDir: filepath.Join(dir, "recordings")}
	for _, p := range []string{d.PolicyDir, d.RecordDir} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// startSupervisor starts a supervisor and waits until it listens. It is
// stopped when the test ends, unless the test killed it.
func startSupervisor(t *testing.T, tl cellTools, dirs supervisor.Dirs) *supervisorProc {
	t.Helper()
	s := &supervisorProc{tl: tl, dirs: dirs, log: filepath.Join(filepath.Dir(dirs.State), fmt.Sprintf("supervise-%d.log", time.Now().UnixNano()))}
	logFile, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	// A program that connected is never killed for being slow: with a
	// short start timeout, one that was would stop the servers' loads.
	s.cmd = exec.Command(tl.syscell, "supervise", "--dir", dirs.State, "--policy-dir", dirs.PolicyDir, "--record-dir", dirs.RecordDir, "--start-timeout", "1s")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			s.cmd.Wait()
		}
		t.Logf("the supervisor's log:\n%s", readFile(t, s.log))
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := supervisor.Dial(dirs.State)
		if err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor does not listen: %v\n%s", err, readFile(t, s.log))
		}
	}
}

// kill kills the supervisor at once, as a crash would.
func (s *supervisorProc) kill(t *testing.T) {
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
}

// waitLog waits for the supervisor's log to hold a line with want.
func (s *supervisorProc) waitLog(t *testing.T, want string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(string(readFile(t, s.log)), "\n") {
			if strings.Contains(line, want) {
				return line
			}
		}
	}
	t.Fatalf("the supervisor's log has no line with %q:\n%s", want, readFile(t, s.log))
	return ""
}

// shim is syscell's OCI runtime with a delegate, its state in the
// test's directories.
type shim struct {
	tl       cellTools
	dirs     supervisor.Dirs
	name     string
	delegate string
	state    string
}

// newShim makes the runtime that delegates to runc or crun. On hosts
// with hybrid cgroups, crun runs in a mount namespace of its own without
// the version 2 hierarchy (see newRuntime), through a wrapper.
func newShim(t *testing.T, tl cellTools, dirs supervisor.Dirs, name string) *shim {
	s := &shim{tl: tl, dirs: dirs, name: name, delegate: need(t, name, name), state: t.TempDir()}
	if name == "crun" && crunNeedsOwnMountNS(t) {
		s.delegate = filepath.Join(t.TempDir(), "crun")
		script := "#!/bin/sh\nexec unshare -m sh -c 'umount /sys/fs/cgroup/unified && exec \"$0\" \"$@\"' " + need(t, "crun", "crun") + " \"$@\"\n"
		if err := os.WriteFile(s.delegate, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *shim) command(args ...string) *exec.Cmd {
	return exec.Command(s.tl.syscell, append([]string{"oci", "--syscell-dir", s.dirs.State, "--syscell-delegate", s.delegate, "--root", s.state}, args...)...)
}

// cellBundle makes a bundle whose root holds cellprobe and the host's
// /usr, read-only, as a container image would hold its programs.
func cellBundle(t *testing.T, tl cellTools, o hostbundle.Options) string {
	t.Helper()
	bundle := t.TempDir()
	o.Files = tl.probeFiles()
	if err := hostbundle.Write(bundle, o); err != nil {
		t.Fatal(err)
	}
	return bundle
}

// probeFiles are cellprobe's files, by where they lie in containers.
func (tl cellTools) probeFiles() map[string]string {
	files := map[string]string{}
	for _, f := range probeFiles {
		files[filepath.Join(probeDir, f)] = filepath.Join(tl.probe, f)
	}
	return files
}

// waitRecording waits for the supervisor to write recording name of
// container id, and returns its path.
func waitRecording(t *testing.T, dirs supervisor.Dirs, name, id string) string {
	t.Helper()
	path := filepath.Join(dirs.RecordDir, name, id+".toml")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	lossy, _ := filepath.Glob(filepath.Join(dirs.RecordDir, name, "*"))
	t.Fatalf("no recording %s after the container exited (found %v)", path, lossy)
	return ""
}

// startWaiting runs cellprobe's wait mode in container id of bundle,
// and returns once it is ready, with its standard input.
func startWaiting(t *testing.T, s *shim, bundle, id string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := commandContext(t.Context(), s.command("run", "--bundle", bundle, id))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("cellprobe said %q (%v), want ready", line, err)
	}
	return cmd, stdin
}

// recordProbe records cellprobe's wait mode in a container through the
// runtime (syscell.record) and installs the recording as the policy
// named name.
func recordProbe(t *testing.T, s *shim, sup *supervisorProc, name string) string {
	t.Helper()
	tmp := t.TempDir()
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: []string{probeProg, "wait", "/tmp"}, Tmp: tmp, Annotations: map[string]string{"syscell.record": name}})
	cmd := s.command("run", "--bundle", bundle, id)
	cmd.Stdin = strings.NewReader("go\n")
	execute(t, runTimeout, cmd)
	rec := waitRecording(t, sup.dirs, name, id)
	copyFile(t, rec, filepath.Join(sup.dirs.PolicyDir, name+".toml"), 0o644)
	return rec
}

// TestCellContainers runs cellprobe in containers created by syscell's
// runtime over runc and over crun: recorded in the container (the
// syscell.record annotation), then run under that per-library policy
// (syscell.policy): libnomk.so may not make the calls libmaymk.so may
// (a mkdir from its own code, a file created through libc's stdio, which
// only the supervisor can attribute), and what they would have made is
// not there; the same checks hold outside a container under syscell run.
// Recordings of the two containers merge, by the paths inside the
// container. Then the supervisor is killed while a container runs: its
// supervised calls fail with ENOSYS, those the kernel decides are still
// decided; and a container created under a policy cannot start while no
// supervisor listens.
func TestCellContainers(t *testing.T) {
	requireRoot(t)
	tl := setUpCell(t)
	dirs := newSupervisorDirs(t)
	sup := startSupervisor(t, tl, dirs)
	want := string(readFile(t, "testdata/cellprobe.want"))
	var recordings []string
	for _, name := range runtimes {
		t.Run(name, func(t *testing.T) {
			s := newShim(t, tl, dirs, name)
			policyName := "cellprobe-" + name
			recordings = append(recordings, recordProbe(t, s, sup, policyName))
			tmp := t.TempDir()
			id := containerID(t, name)
			bundle := cellBundle(t, tl, hostbundle.Options{Args: []string{probeProg, "attack", "/tmp"}, Tmp: tmp, Annotations: map[string]string{"syscell.policy": policyName}})
			got := string(execute(t, runTimeout, s.command("run", "--bundle", bundle, id)))
			if got != want {
				t.Errorf("cellprobe attack in a container printed\n%s\nwant\n%s", got, want)
			}
			checkProbeFiles(t, tmp)
			sup.waitLog(t, "container "+id+": process")
		})
	}
	t.Run("outside", func(t *testing.T) {
		tmp := t.TempDir()
		policyFile := filepath.Join(t.TempDir(), "cellprobe.toml")
		prog := filepath.Join(tl.probe, "cellprobe")
		record := exec.Command(tl.syscell, "record", "-q", "-o", policyFile, "--", prog, "wait", tmp)
		record.Stdin = strings.NewReader("go\n")
		execute(t, runTimeout, record)
		tmp = t.TempDir()
		got := string(execute(t, runTimeout, exec.Command(tl.syscell, "run", "--policy", policyFile, "--", prog, "attack", tmp)))
		if got != want {
			t.Errorf("cellprobe attack under syscell run printed\n%s\nwant\n%s", got, want)
		}
		checkProbeFiles(t, tmp)
	})
	t.Run("merge", func(t *testing.T) {
		if len(recordings) != 2 {
			t.Skip("SKIPPED: the recordings of both runtimes are needed")
		}
		checkMerged(t, tl, recordings)
	})
	t.Run("running", func(t *testing.T) {
		recordRunning(t, newShim(t, tl, dirs, runtimes[0]))
	})
	t.Run("supervisor-death", func(t *testing.T) {
		s := newShim(t, tl, dirs, runtimes[0])
		supervisorDeath(t, s, sup, "cellprobe-"+runtimes[0])
		startWithoutSupervisor(t, s, "cellprobe-"+runtimes[0])
	})
}

// checkProbeFiles holds cellprobe attack to the kernel's account: what
// libmaymk.so made is there, what libnomk.so tried to make is not.
func checkProbeFiles(t *testing.T, tmp string) {
	t.Helper()
	for f, want := range map[string]bool{"made": true, "made/file": true, "denied": false, "denied-file": false} {
		_, err := os.Stat(filepath.Join(tmp, f))
		if (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", f, err == nil, want)
		}
	}
}

// checkMerged merges the recordings of two containers: the compartments
// are named by the paths inside the container, and counts add up.
func checkMerged(t *testing.T, tl cellTools, recordings []string) {
	merged := filepath.Join(t.TempDir(), "merged.toml")
	args := []string{"record", "-o", merged}
	for _, r := range recordings {
		args = append(args, "--merge", r)
	}
	execute(t, runTimeout, exec.Command(tl.syscell, args...))
	p, _, err := policy.Load(merged, policy.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range p.Compartments {
		names[c.Name] = true
	}
	for _, f := range probeFiles {
		if !names[probeDir+"/"+f] {
			t.Errorf("the merged recording has no compartment %s/%s: %v", probeDir, f, names)
		}
	}
	if !strings.Contains(string(readFile(t, merged)), `"getpid", # 2 calls`) {
		t.Errorf("libnomk.so's getpid, once in each container, is not counted twice:\n%s", readFile(t, merged))
	}
}

// supervisorDeath kills the supervisor while cellprobe waits in a
// container: libmaymk.so's file, created through stdio (a supervised
// call), fails with ENOSYS and is not there; its mkdir, decided by the
// kernel from its stub, still works.
func supervisorDeath(t *testing.T, s *shim, sup *supervisorProc, policyName string) {
	tmp := t.TempDir()
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: []string{probeProg, "wait", "/tmp"}, Tmp: tmp, Annotations: map[string]string{"syscell.policy": policyName}})
	cmd, stdin := startWaiting(t, s, bundle, id)
	sup.kill(t)
	io.WriteString(stdin, "go\n")
	stdin.Close()
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != int(syscall.ENOSYS) {
		t.Errorf("with the supervisor killed, cellprobe ended with %v, want exit status %d (ENOSYS from its supervised openat)", err, syscall.ENOSYS)
	}
	if _, err := os.Stat(filepath.Join(tmp, "after")); err == nil {
		t.Errorf("the file whose supervised openat failed exists")
	}
	if _, err := os.Stat(filepath.Join(tmp, "after-dir")); err != nil {
		t.Errorf("libmaymk.so's mkdir, which the kernel decides, failed: %v", err)
	}
}

// startWithoutSupervisor creates a container under a policy while a
// supervisor runs, and starts it once the supervisor is gone: the audit
// library cannot connect, and the program exits before its first
// instruction, saying why.
func startWithoutSupervisor(t *testing.T, s *shim, policyName string) {
	sup := startSupervisor(t, s.tl, s.dirs)
	tmp := t.TempDir()
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: []string{probeProg, "attack", "/tmp"}, Tmp: tmp, Annotations: map[string]string{"syscell.policy": policyName}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	create := s.command("create", "--bundle", bundle, id)
	create.Stdout, create.Stderr = w, w
	err = create.Run()
	w.Close()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { s.command("delete", "--force", id).Run() })
	sup.kill(t)
	execute(t, runTimeout, s.command("start", id))
	out, _ := io.ReadAll(r)
	if !strings.Contains(string(out), "syscell-audit: connect to the supervisor at "+supervisor.ContainerSocket) {
		t.Errorf("the container started without a supervisor said\n%s\nwant the audit library's refusal", out)
	}
	if strings.Contains(string(out), "nomk") {
		t.Errorf("the program ran without its supervisor:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(tmp, "made")); err == nil {
		t.Errorf("the program ran without its supervisor: it made a directory")
	}
}

// recordRunning records a container that runs already, started without
// annotations (the delegate's alone), by its init process's cgroup
// (syscell record --pid): its calls from then on are attributed to the
// libraries, named by the paths inside the container.
func recordRunning(t *testing.T, s *shim) {
	tmp := t.TempDir()
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: []string{probeProg, "wait", "/tmp"}, Tmp: tmp})
	cmd, stdin := startWaiting(t, s, bundle, id)
	defer cmd.Wait()
	defer stdin.Close()
	var state specs.State
	if err := json.Unmarshal(execute(t, runTimeout, s.command("state", id)), &state); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "running.toml")
	record := commandContext(t.Context(), exec.Command(s.tl.syscell, "record", "-q", "--pid", fmt.Sprint(state.Pid), "-o", out))
	stderr, err := record.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := record.Start(); err != nil {
		t.Fatal(err)
	}
	said := bufio.NewReader(stderr)
	if line, err := said.ReadString('\n'); err != nil || !strings.HasPrefix(line, "syscell: recording the processes of ") {
		t.Fatalf("syscell record said %q (%v)", line, err)
	}
	io.WriteString(stdin, "go\n")
	rest, _ := io.ReadAll(said)
	if err := record.Wait(); err != nil {
		t.Fatalf("syscell record --pid: %v\n%s", err, rest)
	}
	p, _, err := policy.Load(out, policy.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][]string{}
	for _, c := range p.Compartments {
		calls[c.Name] = c.Syscalls
	}
	for _, want := range []string{"mkdir", "openat"} {
		if !slices.Contains(calls[probeDir+"/libmaymk.so"], want) {
			t.Errorf("the recording of the running container has no %s by %s/libmaymk.so: %v", want, probeDir, calls)
		}
	}
	if !slices.Contains(calls[probeDir+"/libnomk.so"], "getpid") {
		t.Errorf("the recording of the running container has no getpid by %s/libnomk.so: %v", probeDir, calls)
	}
}
