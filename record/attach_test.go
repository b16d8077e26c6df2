//go:build linux

package record_test

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/record"
)

// TestAttachFromExec attaches to a shell that waits on its standard
// input, then executes another program, as a container's init runs the
// runtime's code and executes the container's program: with FromExec,
// the shell's calls are not recorded and the program's are, until it
// exits.
func TestAttachFromExec(t *testing.T) {
	fixtureDir(t)
	shell, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	prog, err := exec.LookPath("true")
	if err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	cmd := exec.Command(shell, "-c", "read line; exec "+prog)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	a, err := record.Attach(record.ProcessTasks(cmd.Process.Pid), record.AttachOptions{FromExec: true})
	if errors.Is(err, unix.EPERM) || errors.Is(err, ebpf.ErrNotSupported) {
		stdin.Close()
		t.Skipf("SKIPPED: the recorder's eBPF program cannot be loaded: %v", err)
	}
	if err != nil {
		stdin.Close()
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	stdin.Close()
	rec, err := a.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range rec.Compartments {
		names = append(names, c.Name)
	}
	real, _ := exec.LookPath(shell)
	if slices.ContainsFunc(names, func(n string) bool { return n == shell || n == real || n == "/usr/bin/dash" }) {
		t.Errorf("the shell's calls before its exec were recorded: %q", names)
	}
	if rec.Stats.Processes != 1 || len(rec.StartUp) == 0 {
		t.Errorf("the program the shell executed was not recorded from its start: %q, %+v", names, rec.Stats)
	}
	if rec.Stats.Interrupted {
		t.Error("the recording was interrupted, though the process exited")
	}
}

// TestAttachGone fails to attach to a process that does not exist.
func TestAttachGone(t *testing.T) {
	fixtureDir(t)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := record.Attach(record.ProcessTasks(cmd.Process.Pid), record.AttachOptions{}); err == nil {
		t.Error("attached to a process that exited")
	}
}
