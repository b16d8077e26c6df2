package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/syscell/syscell/supervisor"
)

// startWait bounds how long a supervisor the shim started may take to
// listen.
const startWait = 5 * time.Second

// dial connects to the supervisor, if one runs.
func (r *runtime) dial() (*supervisor.Client, error) {
	return supervisor.Dial(r.dirs.State)
}

// supervisor connects to the supervisor, and starts one if none runs
// and no service manages it (a systemd unit, a Kubernetes DaemonSet,
// which say so in the state directory's managed file):
// this very binary's supervise command, in a session and cgroups of its
// own, so that neither the container engine's process group nor the
// cgroup of the process that called the shim (which the engine removes
// with the container) takes it down. Two shims starting one at once
// start one: the supervisor locks its state directory.
func (r *runtime) supervisor() (*supervisor.Client, error) {
	if c, err := r.dial(); err == nil {
		return c, nil
	}
	if managed, err := os.ReadFile(r.dirs.Managed()); err == nil {
		return r.waitSupervisor(strings.TrimSpace(string(managed)))
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.dirs.State, 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(r.dirs.State, "supervise.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "supervise", "--own-cgroup", "--dir", r.dirs.State,
		"--policy-dir", r.dirs.PolicyDir, "--record-dir", r.dirs.RecordDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startWait)
	for {
		c, err := r.dial()
		if err == nil {
			return c, nil
		}
		select {
		case werr := <-exited:
			// Another shim's supervisor may have won the lock.
			if c, err := r.dial(); err == nil {
				return c, nil
			}
			return nil, fmt.Errorf("the supervisor it started exited (%v): see %s", werr, logFile.Name())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("no supervisor listens on %s after %v", r.dirs.ControlSocket(), startWait), err)
		}
	}
}

// waitSupervisor waits for the supervisor a service manages to listen.
func (r *runtime) waitSupervisor(manager string) (*supervisor.Client, error) {
	deadline := time.Now().Add(startWait)
	for {
		c, err := r.dial()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the supervisor that %s manages does not listen on %s: %w", manager, r.dirs.ControlSocket(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
