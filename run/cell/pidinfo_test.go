package cell

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// TestTaskInfo checks that the kernel's answer through a pidfd is the
// status file's, for a process, a thread that leads no group, and a
// child; and that a task that does not exist is an error.
func TestTaskInfo(t *testing.T) {
	child := exec.Command("sleep", "10")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
	// The runtime has threads of its own besides the main one.
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := -1
	for _, task := range tasks {
		if id, err := strconv.Atoi(task.Name()); err == nil && id != os.Getpid() {
			tid = id
		}
	}
	if tid < 0 {
		t.Fatal("no thread but the main one")
	}
	if _, _, ok := pidfdTaskInfo(os.Getpid()); !ok {
		t.Log("THIS KERNEL HAS NO PIDFD_GET_INFO (Linux 6.13): only the fallback is checked")
	}
	for _, tc := range []struct {
		name             string
		id, tgid, parent int
	}{
		{"process", os.Getpid(), os.Getpid(), os.Getppid()},
		{"thread", tid, os.Getpid(), os.Getppid()},
		{"child", child.Process.Pid, child.Process.Pid, os.Getpid()},
	} {
		for _, read := range []struct {
			how  string
			info func(int) (int, int, error)
		}{{"taskInfo", taskInfo}, {"status", statusTaskInfo}} {
			tgid, ppid, err := read.info(tc.id)
			if err != nil || tgid != tc.tgid || ppid != tc.parent {
				t.Errorf("%s of the %s: %d, %d, %v; want %d, %d", read.how, tc.name, tgid, ppid, err, tc.tgid, tc.parent)
			}
		}
	}
	if _, _, err := taskInfo(1 << 30); err == nil {
		t.Error("taskInfo of a task that does not exist: no error")
	}
}
