package cell

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/notify"
)

// thread is a thread of the program that made a supervised call.
type thread struct {
	tid int
	// fd is /proc/TID/syscall, kept open: it pins the thread, so a read
	// fails (ESRCH) once the thread is gone, even if its id has been
	// reused.
	fd   int
	proc *process
}

// process is an address space of the program, and what the supervisor
// knows of it.
type process struct {
	tgid int
	// mu guards space, epoch, chains and code: the supervisor's workers
	// attribute one call of the process at a time.
	mu sync.Mutex
	// pidfd becomes readable when the process exits, which tells a
	// record of a dead process from one of a new process that reuses its
	// id.
	pidfd int
	space *attribute.Space
	// epoch is what the epoch page said when space was read.
	epoch epoch
	// chains is valid for space only while its epoch holds.
	chains *chains
	// code is what the last read of smaps found sealed (identity.go).
	code *sealedCode
	// execs counts the execs the supervisor let the process make
	// (execLetRun): mappings read before one may be another image's.
	execs atomic.Uint64
	// start is where the process is in starting an image (startup.go),
	// and bound the compartment that bounds its image, "" for none
	// (execs.go); both under the supervisor's mu.
	start imageStart
	bound string
	// started is when the process started, once a snapshot told
	// (snapshots.go), under the supervisor's mu.
	started uint64
	// servingSince is the boot time from which the process serves, 0
	// while it starts (phases.go), under the supervisor's mu.
	servingSince uint64
}

// epoch is the content of the audit library's epoch page
// (audit/window.c): ok is false where there is no such page, as after
// an exec.
type epoch struct {
	cookie, count uint64
	ok            bool
}

// stable says whether objects may be cached by this epoch: the loader is
// not changing them.
func (e epoch) stable() bool { return e.ok && e.count%2 == 0 }

func (p *process) close() {
	unix.Close(p.pidfd)
}

// exited says whether the process is gone.
func (p *process) exited() bool {
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// openThread opens the record of thread tid of p.
func openThread(tid int, p *process) (*thread, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/syscall", tid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cell: /proc/%d/syscall: %w", tid, err)
	}
	return &thread{tid: tid, fd: fd, proc: p}, nil
}

// close closes the thread's record.
func (t *thread) close() { unix.Close(t.fd) }

// entry is a thread stopped at system call entry: its stack and
// instruction pointers, from /proc/TID/syscall.
type entry struct {
	nr     int64
	sp, pc uint64
}

// readEntry reads where the thread is stopped, in one pread: the line is
// made whole at each read (os.File.ReadAt would read again, to find its
// end).
func (t *thread) readEntry() (entry, error) {
	var buf [256]byte
	n, err := unix.Pread(t.fd, buf[:], 0)
	if err != nil {
		return entry{}, fmt.Errorf("cell: /proc/%d/syscall: %w", t.tid, err)
	}
	return parseEntry(string(buf[:n]))
}

// errRunning reports a thread that is not stopped: it is alive.
var errRunning = errors.New("the thread is running")

// parseEntry reads "NR ARG0 ... ARG5 SP PC", the line of a thread stopped
// in a system call.
func parseEntry(s string) (entry, error) {
	if strings.TrimSpace(s) == "running" {
		return entry{}, errRunning
	}
	f := strings.Fields(s)
	if len(f) != 9 {
		return entry{}, fmt.Errorf("cell: thread not stopped in a system call: %q", s)
	}
	nr, err1 := strconv.ParseInt(f[0], 10, 64)
	sp, err2 := strconv.ParseUint(strings.TrimPrefix(f[7], "0x"), 16, 64)
	pc, err3 := strconv.ParseUint(strings.TrimPrefix(f[8], "0x"), 16, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return entry{}, fmt.Errorf("cell: system call line %q: %w", s, err)
	}
	return entry{nr: nr, sp: sp, pc: pc}, nil
}

// pidfdOpen opens a pidfd for pid, a thread-group leader.
func pidfdOpen(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("cell: pidfd of process %d: %w", pid, err)
	}
	return fd, nil
}

// stopped returns the calling thread and where it is stopped, checking
// that it is the notified call.
func (s *supervisor) stopped(n *notify.Notification) (*thread, entry, error) {
	t, err := s.thread(n.Pid)
	if err != nil {
		return nil, entry{}, err
	}
	e, err := s.waitStopped(t, n)
	if err != nil && !errors.Is(err, errRunning) {
		// The thread is gone, and its id may be another thread's now.
		s.forget(n.Pid, t)
		if t, err = s.thread(n.Pid); err != nil {
			return nil, entry{}, err
		}
		e, err = s.waitStopped(t, n)
	}
	if err != nil {
		return nil, entry{}, err
	}
	if e.nr != int64(n.Data.Nr) || e.pc != n.Data.IP {
		return nil, entry{}, fmt.Errorf("cell: thread %d is at call %d, %#x, not the notified %d, %#x", n.Pid, e.nr, e.pc, n.Data.Nr, n.Data.IP)
	}
	return t, e, nil
}

// How long waitStopped waits: spinning first, for the moment a thread
// takes to go to sleep, then, for a thread the scheduler has preempted on
// its way (a loaded machine), sleeping a little between tries, up to
// stoppedWait.
const (
	stoppedSpins = 10000
	stoppedNap   = 50 * time.Microsecond
	stoppedWait  = 2 * time.Second
)

// waitStopped reads where thread t is stopped. The kernel queues a
// notification before the thread goes to sleep, so the supervisor may
// find it still running for a while; it waits, as long as the
// notification is pending.
func (s *supervisor) waitStopped(t *thread, n *notify.Notification) (entry, error) {
	deadline := time.Now().Add(stoppedWait)
	for try := 0; try < stoppedSpins || time.Now().Before(deadline); try++ {
		e, err := t.readEntry()
		if !errors.Is(err, errRunning) {
			return e, err
		}
		if err := s.l.Valid(n.ID); err != nil {
			return entry{}, err
		}
		if try < stoppedSpins {
			runtime.Gosched()
		} else {
			time.Sleep(stoppedNap)
		}
	}
	return entry{}, fmt.Errorf("cell: thread %d: %w", t.tid, errRunning)
}

// minSweep is the fewest thread records that make a sweep worth it.
const minSweep = 64

// forget drops the record t of thread tid, unless another worker has
// replaced it already.
func (s *supervisor) forget(tid int, t *thread) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads[tid] == t {
		t.close()
		delete(s.threads, tid)
	}
}

// thread returns the record of thread tid, opening it if new.
func (s *supervisor) thread(tid int) (*thread, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.threads[tid]; ok {
		return t, nil
	}
	if len(s.threads) >= s.sweepAt {
		s.sweep()
	}
	tgid, err := tgidOf(tid)
	if err != nil {
		return nil, err
	}
	p, err := s.process(tgid)
	if err != nil {
		return nil, err
	}
	t, err := openThread(tid, p)
	if err != nil {
		return nil, err
	}
	s.threads[tid] = t
	return t, nil
}

// sweep drops the records of threads and processes that are gone, each
// of which holds a descriptor. It runs when the records have doubled
// since the last sweep, so that its cost is spread over their creation.
func (s *supervisor) sweep() {
	for tid, t := range s.threads {
		if _, err := t.readEntry(); err != nil && !errors.Is(err, errRunning) {
			t.close()
			delete(s.threads, tid)
		}
	}
	for tgid, p := range s.procs {
		if p.exited() {
			p.close()
			delete(s.procs, tgid)
		}
	}
	s.sweepAt = max(minSweep, 2*len(s.threads))
}

// process returns the record of process tgid, replacing one of a process
// that has exited.
func (s *supervisor) process(tgid int) (*process, error) {
	if p, ok := s.procs[tgid]; ok && !p.exited() {
		return p, nil
	} else if ok {
		p.close()
		for tid, t := range s.threads {
			if t.proc == p {
				t.close()
				delete(s.threads, tid)
			}
		}
	}
	pidfd, err := pidfdOpen(tgid)
	if err != nil {
		return nil, err
	}
	p := &process{tgid: tgid, pidfd: pidfd, bound: s.inheritedBound(tgid)}
	if s.phased {
		if p.servingSince = s.inheritedServing(tgid); p.servingSince != 0 {
			s.served++
		}
	}
	s.procs[tgid] = p
	s.watch(tgid)
	return p, nil
}
