package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/internal/hostbundle"
	"github.com/syscell/syscell/internal/hostservers"
)

// TestCellServers runs redis-server and nginx in containers through
// syscell's runtime over runc: recorded there under a short load (the
// syscell.record annotation), then under that per-library policy
// (syscell.policy) with the same load, which must be served with no call
// denied.
func TestCellServers(t *testing.T) {
	requireRoot(t)
	for _, srv := range hostservers.All {
		for _, tool := range srv.Tools {
			need(t, tool, srv.Name)
		}
	}
	tl := setUpCell(t)
	dirs := newSupervisorDirs(t)
	sup := startSupervisor(t, tl, dirs)
	s := newShim(t, tl, dirs, runtimes[0])
	for _, srv := range hostservers.All {
		t.Run(srv.Name, func(t *testing.T) {
			policyName := "server-" + srv.Name
			id := serveInContainer(t, s, srv, map[string]string{"syscell.record": policyName})
			copyFile(t, waitRecording(t, dirs, policyName, id), filepath.Join(dirs.PolicyDir, policyName+".toml"), 0o644)
			id = serveInContainer(t, s, srv, map[string]string{"syscell.policy": policyName})
			line := sup.waitLog(t, "container "+id+": process")
			if m := regexp.MustCompile(` (\d+) denied;`).FindStringSubmatch(line); m == nil || m[1] != "0" {
				t.Errorf("%s under its policy: %s", srv.Name, line)
			}
		})
	}
}

// serveInContainer runs srv in a container with annotations, loads it
// briefly, stops it with SIGTERM (which the runtime passes on) and
// returns the container's id.
func serveInContainer(t *testing.T, s *shim, srv hostservers.Server, annotations map[string]string) string {
	t.Helper()
	tmp := t.TempDir()
	port := freePort(t)
	args, err := srv.Command(tmp, port)
	if err != nil {
		t.Fatal(err)
	}
	id := containerID(t, s.name)
	bundle := cellBundle(t, s.tl, hostbundle.Options{Args: args, Tmp: tmp, Annotations: annotations, HostNet: true, HostEtc: true})
	cmd := commandContext(t.Context(), s.command("run", "--bundle", bundle, id))
	logFile, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); !srv.Ready(port); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it served: %v\n%s", srv.Name, err, readFile(t, logFile.Name()))
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("%s does not answer on port %d\n%s", srv.Name, port, readFile(t, logFile.Name()))
		}
	}
	if _, err := srv.Load(t.Context(), port, true); err != nil {
		t.Errorf("%s's load: %v", srv.Name, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("%s did not stop cleanly: %v\n%s", srv.Name, err, readFile(t, logFile.Name()))
	}
	return id
}
