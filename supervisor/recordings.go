package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/record"
)

// startRecording records container c from its init process's exec of
// the container's program (until then it runs the runtime's code) to the
// exit of the last of its processes, and writes the recording to the
// recording directory: RECORDING/ID.toml, or RECORDING/ID.lossy.toml for
// one with calls that could not be attributed or were lost (its union
// still allows them). Replicas of one workload share the recording's
// name and write one file each, which syscell record --merge unites.
func (d *daemon) startRecording(c *Container) error {
	root, err := holdRoot(c.Pid)
	if err != nil {
		return fmt.Errorf("container %s: record: %w", c.ID, err)
	}
	a, err := record.Attach(record.ProcessTasks(c.Pid), record.AttachOptions{FromExec: true, Root: root.path()})
	if err != nil {
		root.close()
		return fmt.Errorf("container %s: record: %w", c.ID, err)
	}
	id, name := c.ID, c.Use.Record
	d.sessions.Add(1)
	go func() {
		defer d.sessions.Done()
		defer root.close()
		rec, err := a.Wait(d.ctx)
		if err == nil {
			err = d.writeRecording(id, name, rec)
		}
		if err != nil {
			d.log.Printf("container %s: recording %s: %v", id, name, err)
		}
	}()
	return nil
}

func (d *daemon) writeRecording(id, name string, rec *record.Recording) error {
	if len(rec.Compartments) == 0 {
		d.log.Printf("container %s: recording %s: no call was recorded (the container never started its program): nothing written", id, name)
		return nil
	}
	dir := filepath.Join(d.cfg.Dirs.RecordDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := id + ".toml"
	if rec.Lossy() {
		file = id + ".lossy.toml"
	}
	var buf bytes.Buffer
	if err := rec.WriteTOML(&buf); err != nil {
		return err
	}
	path := filepath.Join(dir, file)
	tmp := filepath.Join(dir, "."+file+".tmp")
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d.log.Printf("container %s: recording %s written to %s: %s", id, name, path, rec.Summary())
	return nil
}

// heldRoot is a container's root directory, reachable with its mounts
// for as long as it is held, after the container's processes exit: the
// recorder reads the files they mapped from there.
type heldRoot struct{ dir, mountNS int }

// holdRoot holds the root of process pid and its mount namespace.
func holdRoot(pid int) (*heldRoot, error) {
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	dir, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(ns)
		return nil, err
	}
	return &heldRoot{dir: dir, mountNS: ns}, nil
}

func (h *heldRoot) path() string { return "/proc/self/fd/" + strconv.Itoa(h.dir) }

func (h *heldRoot) close() {
	unix.Close(h.dir)
	unix.Close(h.mountNS)
}
