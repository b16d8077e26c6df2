package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
)

// run creates and starts a container, and in the foreground waits for it
// to exit and deletes it, as runc run does. A container that asks
// nothing of syscell is the delegate's run. One that does is created as
// create creates it, then started; the shim, a subreaper, adopts its
// init process once the delegate's create has exited, passes it the
// signals the shim receives, and exits with its status.
func (r *runtime) run(args []string) error {
	b, err := r.readBundle("run", args, runFlags)
	if err != nil {
		return err
	}
	cl, id := b.cl, b.id
	if b.spec.Process != nil && b.spec.Process.Terminal && !cl.has("console-socket") {
		return errors.New("run: a container with a terminal needs --console-socket under syscell (or create and start)")
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("run: become a subreaper: %w", err)
	}
	pid, err := r.createWith(id, cl, createArgs(cl, id), b.dir, b.spec, b.use)
	if err != nil {
		return err
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals)
	defer signal.Stop(signals)
	if err := r.watchStart(id); err != nil {
		r.remove(id)
		return err
	}
	if status, err := r.delegateRun("start", id); err != nil || status != 0 {
		r.remove(id)
		if err == nil {
			err = exitStatus(status)
		}
		return err
	}
	if cl.has("detach", "d") {
		return nil
	}
	status := waitInit(pid, signals)
	if !cl.has("keep") {
		r.remove(id)
	}
	return exitStatus(status)
}

// createArgs are the arguments of run that create takes.
func createArgs(cl *commandLine, id string) []string {
	var out []string
	for _, name := range []string{"bundle", "console-socket", "pid-file", "preserve-fds"} {
		if v := cl.value(name); cl.has(name) {
			out = append(out, "--"+name, v)
		}
	}
	if b := cl.value("b"); cl.has("b") {
		out = append(out, "--bundle", b)
	}
	for _, name := range []string{"no-pivot", "no-new-keyring"} {
		if cl.has(name) {
			out = append(out, "--"+name)
		}
	}
	return append(out, id)
}

// waitInit waits for the container's init process, the shim's child by
// adoption, passing it the signals the shim receives, and returns its
// status as a shell gives it. Other orphans the shim adopted are reaped
// on the way.
func waitInit(pid int, signals <-chan os.Signal) int {
	exited := make(chan int, 1)
	go func() {
		for {
			var ws unix.WaitStatus
			got, err := unix.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || got == pid {
				switch {
				case err != nil:
					exited <- 255
				case ws.Signaled():
					exited <- 128 + int(ws.Signal())
				default:
					exited <- ws.ExitStatus()
				}
				return
			}
		}
	}()
	for {
		select {
		case status := <-exited:
			return status
		case sig := <-signals:
			// Syscell's own wake-up signal never reaches the container.
			if s, ok := sig.(unix.Signal); ok && s != unix.SIGCHLD && s != unix.SIGURG && s != notify.WakeSignal {
				unix.Kill(pid, s)
			}
		}
	}
}

// remove deletes a container the shim created, and unregisters it.
func (r *runtime) remove(id string) {
	r.delegateRun("delete", "--force", id)
	r.forget(id)
}
