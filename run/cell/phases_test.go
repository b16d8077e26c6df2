package cell_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/run/cell"
	"github.com/syscell/syscell/run/enforce"
)

// TestPhases runs the server fixture with a policy whose libserve.so may
// create files only while its process starts: it may before its process
// serves, in a worker forked before its parent served, and never once
// its process serves or in a process born serving; a denied create
// fails with EPERM and creates nothing.
func TestPhases(t *testing.T) {
	dir := fixtures(t)
	scratch := t.TempDir()
	var out, errOut bytes.Buffer
	cmd := enforce.Command{Path: filepath.Join(dir, "server"), Args: []string{"server", scratch}, Stdout: &out, Stderr: &errOut}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cell.Run(ctx, loadPolicy(t, "server.toml"), cmd, cell.Options{Library: filepath.Join(dir, auditLib)})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("server: %v, %+v\nstdout:\n%s\nstderr:\n%s", err, res, out.String(), errOut.String())
	}
	if d := res.FirstDenied; d == nil || d.Syscall != "openat" || d.Compartment != "libserve.so" || !d.Serving {
		t.Errorf("first denial %+v, want libserve.so's openat while serving", d)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		name, result, _ := strings.Cut(line, " ")
		got[name] = result
	}
	for name, want := range map[string]string{
		"start": "0", "serving": "EPERM", "serving-syscall": "EPERM", "born-serving": "EPERM",
		"worker-starting": "0", "worker-serving": "EPERM",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %s (all: %v)", name, got[name], want, got)
		}
		_, err := os.Stat(filepath.Join(scratch, name))
		if made := err == nil; made != (want == "0") || err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: created %v (%v), want %v", name, made, err, want == "0")
		}
	}
}
