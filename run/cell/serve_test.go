package cell_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell"
)

// TestSupervise has prog connect to a socket by its path, as a program
// in a container connects to the supervisor, and supervises it with
// Supervise: the same verdicts as Run's (getpid allowed from
// libgetpid.so, mkdir denied to libmk.so and nothing made), a call from
// libc's stdio, called through a pointer, attributed and denied by the
// supervisor, and an exec,
// whose image inherits the filter.
func TestSupervise(t *testing.T) {
	dir := fixtures(t)
	scratch := t.TempDir()
	if err := os.WriteFile(filepath.Join(scratch, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := loadPolicy(t, policyName)
	socket, l := listenSocket(t)
	lib := filepath.Join(dir, auditLib)
	for _, mode := range []string{"lib", "stdio-pointer"} {
		env, err := cell.Environment(p, os.Environ(), lib, socket)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		cmd := exec.Command(filepath.Join(dir, progName), mode, scratch)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		conn, err := l.AcceptUnix()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := cell.Supervise(ctx, conn, p, cell.Options{Library: lib})
		cancel()
		if werr := cmd.Wait(); err != nil || werr != nil {
			t.Fatalf("%s: Supervise: %v; the program: %v\nstderr:\n%s", mode, err, werr, errOut.String())
		}
		got := strings.Fields(strings.ReplaceAll(out.String(), "\n", " "))
		switch mode {
		case "lib":
			if !slices.Contains(got, "EPERM") || strings.Count(out.String(), " -\n") != 1 {
				t.Errorf("lib: getpid allowed and mkdir denied expected, got\n%s", out.String())
			}
			if _, err := os.Stat(filepath.Join(scratch, "lib")); err == nil {
				t.Errorf("lib: libmk.so's denied mkdir made its directory")
			}
		case "stdio-pointer":
			if !supervisedBy(res, "libmk.so", false) {
				t.Errorf("stdio-pointer: the supervisor denied libmk.so nothing: %+v", res.Supervised)
			}
		}
	}
}

// listenSocket listens on a supervisor's socket in a directory of the
// test's.
func listenSocket(t *testing.T) (string, *net.UnixListener) {
	socket := filepath.Join(t.TempDir(), "supervisor.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return socket, l
}

func supervisedBy(res *cell.Result, owner string, allowed bool) bool {
	for _, s := range res.Supervised {
		if s.Owner == owner && s.Allowed == allowed {
			return true
		}
	}
	return false
}

// TestSuperviseRefusesEarly closes the connection of a program whose
// policy cannot be compiled for it: the audit library exits before the
// program's first instruction, saying why.
func TestSuperviseRefusesEarly(t *testing.T) {
	dir := fixtures(t)
	p := loadPolicy(t, policyName)
	socket, l := listenSocket(t)
	env, err := cell.Environment(p, os.Environ(), filepath.Join(dir, auditLib), socket)
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, progName), "lib", t.TempDir())
	cmd.Env, cmd.Stderr = env, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := l.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	// No audit library where the program's root has it.
	_, err = cell.Supervise(context.Background(), conn, p, cell.Options{Library: "/nonexistent/" + cell.LibraryName, Root: "/"})
	if err == nil {
		t.Fatal("Supervise served a program whose audit library is not there")
	}
	var exit *exec.ExitError
	if werr := cmd.Wait(); !errors.As(werr, &exit) || exit.ExitCode() != 126 {
		t.Errorf("the program ended with %v, want exit status 126", werr)
	}
	if !strings.HasPrefix(errOut.String(), "syscell-audit: ") {
		t.Errorf("the program said\n%s", errOut.String())
	}
}

// TestEnvironment gives a program the audit library and the socket,
// and room for what its executed images inherit, whatever files the
// policy's compartments turn out to name.
func TestEnvironment(t *testing.T) {
	p := loadPolicy(t, policyName)
	env, err := cell.Environment(p, []string{"PATH=/bin", "SYSCELL_CELL_FD=7", "LD_AUDIT=/x.so"}, "/run/syscell/libsyscell-audit.so", "/run/syscell/supervisor.sock")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "LD_AUDIT=/run/syscell/libsyscell-audit.so", "SYSCELL_CELL_SOCKET=/run/syscell/supervisor.sock"}
	if !slices.Equal(env[:3], want) {
		t.Errorf("Environment: %q, want %q first", env, want)
	}
	room := strings.TrimPrefix(env[3], "SYSCELL_CELL=")
	if strings.Trim(room, " ") != "" || len(room) < 1024 {
		t.Errorf("Environment: %q, want room of spaces for SYSCELL_CELL", env[3])
	}
	if _, err := cell.Environment(&policy.Policy{}, nil, "/a.so", "/s"); err == nil {
		t.Error("Environment of a policy without compartments")
	}
	if _, err := cell.Environment(p, nil, "a.so", "/s"); err == nil {
		t.Error("Environment with a relative library")
	}
}
