package supervisor

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/run/cell"
)

// syncBuffer is a log the supervisor writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testDirs are a supervisor's directories in the test's, with the
// fixtures' policy of package cell as "prog" and a whole-process one.
func testDirs(t *testing.T) Dirs {
	dir := t.TempDir()
	d := Dirs{State: filepath.Join(dir, "state"), PolicyDir: filepath.Join(dir, "policies"), RecordDir: filepath.Join(dir, "recordings")}
	if err := os.Mkdir(d.PolicyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	prog, err := os.ReadFile("../run/cell/testdata/prog.toml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"prog.toml": prog, "whole.toml": []byte("version = 1\ndefault = \"allow\"\n")} {
		if err := os.WriteFile(filepath.Join(d.PolicyDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// startDaemon runs a supervisor until the test ends, and returns a
// client of its control socket and its log.
func startDaemon(t *testing.T, dirs Dirs) (*Client, *syncBuffer) {
	t.Helper()
	c, log, stop := runDaemon(t, dirs)
	t.Cleanup(stop)
	return c, log
}

// runDaemon runs a supervisor until stop is called, and returns a client
// of its control socket and its log.
func runDaemon(t *testing.T, dirs Dirs) (c *Client, log *syncBuffer, stop func()) {
	t.Helper()
	lib := filepath.Join(t.TempDir(), cell.LibraryName)
	if err := os.WriteFile(lib, []byte("the audit library"), 0o644); err != nil {
		t.Fatal(err)
	}
	log = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Dirs: dirs, Library: lib, Log: log, StartTimeout: 200 * time.Millisecond})
	}()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the supervisor: %v", err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := Dial(dirs.State)
		if err == nil {
			return c, log, stop
		}
		select {
		case err := <-done:
			t.Fatalf("the supervisor stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the supervisor does not listen: %v", err)
		}
	}
}

// sleeper starts a process that waits until the test ends, in a PID
// namespace of its own if asked.
func sleeper(t *testing.T, newPIDNamespace bool) int {
	return sleeperCmd(t, newPIDNamespace).Process.Pid
}

func sleeperCmd(t *testing.T, newPIDNamespace bool) *exec.Cmd {
	cmd := exec.Command("sleep", "600")
	if newPIDNamespace {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestStartWatch kills a started container whose program never
// connects: its loader ignored the audit library, and it would run
// without its filter.
func TestStartWatch(t *testing.T) {
	requireRoot(t)
	dirs := testDirs(t)
	c, log := startDaemon(t, dirs)
	init := sleeperCmd(t, true)
	if _, err := c.Prepare("quiet", Use{Policy: "prog"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("quiet", init.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := c.Start("quiet"); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- init.Wait() }()
	select {
	case err := <-exited:
		if ws, ok := init.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the container's init ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the container whose program never connected still runs\n%s", log.String())
	}
	waitFor(t, log, "container quiet: its program did not connect within 200ms")
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("SKIPPED: a supervisor reads other processes' namespaces and makes PID namespaces, which needs root; this is uid %d", os.Geteuid())
	}
}

// TestControl registers containers through the control protocol: the
// environment of a container under a policy, errors for what cannot be
// served, the container's identity once attached, and forgetting it.
func TestControl(t *testing.T) {
	requireRoot(t)
	dirs := testDirs(t)
	c, _ := startDaemon(t, dirs)
	env, err := c.Prepare("c1", Use{Policy: "prog"}, []string{"PATH=/bin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PATH=/bin", "LD_AUDIT=" + ContainerLibrary, "SYSCELL_CELL_SOCKET=" + ContainerSocket} {
		if !slices.Contains(env, want) {
			t.Errorf("the environment %q lacks %s", env, want)
		}
	}
	for _, tc := range []struct {
		id   string
		use  Use
		want string
	}{
		{"../c", Use{Policy: "prog"}, `container "../c": a name`},
		{"c2", Use{Policy: "../run/cell/testdata/prog.toml"}, `policy "../run/cell/testdata/prog.toml": a name`},
		{"c2", Use{Policy: "nosuch"}, `no policy "nosuch" in ` + dirs.PolicyDir},
		{"c2", Use{Policy: "whole"}, "has no compartments"},
		{"c2", Use{Policy: "prog", Mode: "loud"}, `unknown mode "loud"`},
		{"c2", Use{Policy: "prog", Record: "r"}, "not both"},
		{"c2", Use{}, "neither a policy nor a recording"},
		{"c2", Use{Record: "a/b"}, `recording "a/b": a name`},
	} {
		if _, err := c.Prepare(tc.id, tc.use, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Prepare(%s, %+v): %v, want %q", tc.id, tc.use, err, tc.want)
		}
	}
	if err := c.Attach("nosuch", os.Getpid()); err == nil {
		t.Error("Attach of a container never prepared")
	}
	if _, err := c.Env("nosuch", nil); err == nil {
		t.Error("Env of a container never prepared")
	}
	pid := sleeper(t, true)
	if err := c.Attach("c1", pid); err != nil {
		t.Fatal(err)
	}
	list, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := pidNamespace(pid)
	if len(list) != 1 || list[0].ID != "c1" || list[0].Pid != pid || list[0].Namespace != ns || len(list[0].Cgroups) == 0 || list[0].PolicyText != nil {
		t.Errorf("status: %+v", list)
	}
	if _, err := c.Prepare("c1", Use{Policy: "prog"}, nil); err == nil || !strings.Contains(err.Error(), "registered already") {
		t.Errorf("a second container c1 while the first runs: %v", err)
	}
	if err := c.Forget("c1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := c.Status(); len(list) != 0 {
		t.Errorf("status after forget: %+v", list)
	}
}

// TestRestart starts a supervisor again: it serves the containers
// registered before whose init process lives, and drops the others.
func TestRestart(t *testing.T) {
	requireRoot(t)
	dirs := testDirs(t)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	c, _, stop := runDaemon(t, dirs)
	for id, pid := range map[string]int{"live": sleeper(t, true), "gone": exited.Process.Pid} {
		if _, err := c.Prepare(id, Use{Policy: "prog"}, nil); err != nil {
			t.Fatal(err)
		}
		// The kernel may have given the exited process's pid to another
		// process: attached or not, its namespace is not the one seen.
		c.Attach(id, pid)
	}
	stop()
	c, log := startDaemon(t, dirs)
	list, err := c.Status()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ct := range list {
		ids = append(ids, ct.ID)
	}
	if !slices.Equal(ids, []string{"live"}) {
		t.Errorf("restored %q, want live alone\n%s", ids, log.String())
	}
	if !strings.Contains(log.String(), "dropped a registration: container gone: ") {
		t.Errorf("gone was not dropped:\n%s", log.String())
	}
}

// TestAuthentication connects to the programs' socket as a process of
// one container and of none: a process is served only under the policy
// of the container its PID namespace and cgroups say it belongs to.
func TestAuthentication(t *testing.T) {
	requireRoot(t)
	dirs := testDirs(t)
	c, log := startDaemon(t, dirs)
	if _, err := c.Prepare("other", Use{Policy: "prog"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("other", sleeper(t, true)); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	connectAndWait(t, dirs)
	waitFor(t, log, "refused process "+self+": it belongs to no container registered with a policy")

	// This very process is a container's now: its connection is served
	// (and fails further on, since it is no audit library).
	if _, err := c.Prepare("self", Use{Policy: "prog"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Attach("self", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	connectAndWait(t, dirs)
	waitFor(t, log, "container self: process "+self+": ")
}

// connectAndWait connects to the programs' socket and waits for the
// supervisor to close the connection.
func connectAndWait(t *testing.T, dirs Dirs) {
	conn, err := net.Dial("unix", dirs.ProgramSocket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the supervisor did not close the connection: %v", err)
	}
}

func waitFor(t *testing.T, log *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(log.String(), want) {
			return
		}
	}
	t.Errorf("the supervisor's log has no %q:\n%s", want, log.String())
}
