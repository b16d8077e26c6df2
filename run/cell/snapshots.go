package cell

import (
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/run/cell/snapshot"
	"github.com/syscell/syscell/unwind"
)

// The kernel's snapshots of notified threads (package snapshot) spare
// the supervisor two system calls a caller, some 10 µs, but loading their
// program takes 20 to 40 ms of CPU (the kernel's BTF is parsed): the
// supervisor loads it in the background once it has looked for callers
// in /proc loadAfter times, about what the load costs, so that a program
// that needs few (most, since the calls libc makes for a library are
// decided in the kernel: audit/gate.c) pays nothing, and one that needs
// many soon finds them in snapshots. Without root the load fails, and
// /proc it stays.
const loadAfter = 2048

// snapshotOf reads where the notified thread waits from its snapshot,
// copying its stack into w's buffer. The thread's record must be of its
// process: a record of a dead thread whose id was reused would hold
// another process's state.
func (s *supervisor) snapshotOf(n *notify.Notification, w *worker) (*thread, stop, bool) {
	snaps := s.snaps.Load()
	if snaps == nil {
		if s.fromProc.Load() >= loadAfter {
			s.loadSnapshots()
		}
		return nil, stop{}, false
	}
	snap, ok := snaps.Take(n.Pid, n.ID, w.stack[:snapshot.StackBytes])
	if !ok {
		return nil, stop{}, false
	}
	t, err := s.thread(n.Pid)
	if err != nil || t.proc.tgid != snap.Tgid || !s.sameProcess(t.proc, snap.Started) {
		return nil, stop{}, false
	}
	e := entry{nr: int64(snap.Regs.Nr), sp: snap.Regs.SP, pc: snap.Regs.IP}
	if e.nr != int64(n.Data.Nr) || e.pc != n.Data.IP {
		return nil, stop{}, false
	}
	regs := entryRegs(&n.Data, e)
	r := snap.Regs
	regs[unwind.RBX], regs[unwind.RBP] = r.BX, r.BP
	regs[unwind.R12], regs[unwind.R13], regs[unwind.R14], regs[unwind.R15] = r.R12, r.R13, r.R14, r.R15
	var ep epoch
	if snap.EpochOK {
		ep = epoch{cookie: snap.Epoch[0], count: snap.Epoch[1], ok: true}
	}
	mem := &memory{tid: t.tid, sp: r.SP, stack: snap.Stack}
	return t, stop{e: e, ep: ep, mem: mem, regs: regs, full: true}, true
}

// sameProcess says whether p is the process that started at started, by
// the time it started, which the first snapshot of p's, while p is alive,
// tells: a record of a dead process whose id was reused is another's.
func (s *supervisor) sameProcess(p *process, started uint64) bool {
	s.mu.Lock()
	known := p.started
	s.mu.Unlock()
	if known != 0 {
		return known == started
	}
	if p.exited() {
		return false
	}
	s.mu.Lock()
	p.started = started
	s.mu.Unlock()
	return true
}

// loadSnapshots loads the snapshots' program in the background, once,
// and has it watch every process the supervisor knows.
func (s *supervisor) loadSnapshots() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.snapshots || s.loadingSnaps || s.stopping {
		return
	}
	s.loadingSnaps = true
	go func() {
		snaps, err := snapshot.Load(s.epochAt)
		if err != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stopping {
			snaps.Close()
			return
		}
		for tgid, p := range s.procs {
			if !p.exited() {
				snaps.Watch(tgid)
			}
		}
		s.snaps.Store(snaps)
	}()
}

// watch has the snapshots, if loaded, watch a process the supervisor
// has just met; s.mu is held.
func (s *supervisor) watch(tgid int) {
	if snaps := s.snaps.Load(); snaps != nil {
		snaps.Watch(tgid)
	}
}

// stopSnapshots closes the snapshots, or has them closed once loaded.
func (s *supervisor) stopSnapshots() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	if snaps := s.snaps.Swap(nil); snaps != nil {
		snaps.Close()
	}
}
