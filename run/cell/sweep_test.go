package cell

import (
	"os/exec"
	"testing"
)

// TestSweep checks that a sweep drops the records of threads and
// processes that are gone, and keeps the others.
func TestSweep(t *testing.T) {
	s := &supervisor{threads: map[int]*thread{}, procs: map[int]*process{}}
	record := func(pid int) {
		t.Helper()
		pidfd, err := pidfdOpen(pid)
		if err != nil {
			t.Fatal(err)
		}
		p := &process{tgid: pid, pidfd: pidfd}
		s.procs[pid] = p
		th, err := openThread(pid, p)
		if err != nil {
			t.Fatal(err)
		}
		s.threads[pid] = th
	}
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	record(dead.Process.Pid)
	dead.Wait()
	alive := exec.Command("sleep", "60")
	if err := alive.Start(); err != nil {
		t.Fatal(err)
	}
	defer alive.Wait()
	defer alive.Process.Kill()
	record(alive.Process.Pid)
	s.sweep()
	if _, ok := s.threads[dead.Process.Pid]; ok {
		t.Errorf("the exited process's thread is still recorded")
	}
	if _, ok := s.procs[dead.Process.Pid]; ok {
		t.Errorf("the exited process is still recorded")
	}
	if _, ok := s.threads[alive.Process.Pid]; !ok {
		t.Errorf("the live process's thread was dropped")
	}
	if _, ok := s.procs[alive.Process.Pid]; !ok {
		t.Errorf("the live process was dropped")
	}
	if s.sweepAt != minSweep {
		t.Errorf("next sweep at %d records, want %d", s.sweepAt, minSweep)
	}
}
