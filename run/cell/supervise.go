package cell

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/iouring"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/cell/snapshot"
	"github.com/syscell/syscell/run/enforce"
)

// supervisor answers the calls the filter notifies: calls whose verdict
// depends on the caller, made from the system runtime's code or from code
// the filter does not know. It attributes each to its owner with the
// attribution rule (package attribute) and answers with the owner's
// verdict while the caller waits. Several workers answer at once, each
// with its own stack buffer; the calls of one process are attributed one
// at a time (process.mu), the records below are shared under mu.
type supervisor struct {
	l       *notify.Listener
	spec    *compartment.Spec
	ids     *identities
	win     window
	epochAt uint64
	objs    *attribute.Objects
	tracer  *tracer
	// library is the audit library, which every exec must load, and
	// inherit what the images it loads into inherit (Start.Inherit).
	library string
	inherit string
	// execs are the programs each compartment may start with their own
	// compartments, and execRule what happens to the others (execs.go).
	execs    map[string]map[string]bool
	execRule ExecRule
	// mode is what happens to the calls the policy stops.
	mode enforce.Mode

	// sealed says that the audit library seals the code the loader maps
	// (identity.go).
	sealed bool
	// started is the process the program started as, and reported the
	// code ranges its audit library sealed and reported at start, which
	// its first read of mappings takes as found sealed (reportedCode).
	started  int
	reported map[compartment.Range]bool
	// ringOps are the operations io_uring rings may make (uring.go).
	ringOps []iouring.Op
	// denyProcMem refuses opens of /proc/PID/mem for writing (procmem.go).
	denyProcMem bool
	// phased says that processes narrow once they serve (phases.go);
	// served counts those that did, under mu.
	phased bool
	served int

	mu      sync.Mutex
	threads map[int]*thread
	procs   map[int]*process
	// sweepAt is how many thread records trigger a sweep of the dead.
	sweepAt int
	// saved are registers read with ptrace, by thread, for the call the
	// thread makes again.
	saved map[int]*saved
	stats stats
	// denied counts the calls the policy stops that the supervisor saw;
	// first is the first of them, and log gets every one.
	denied denials
	first  *enforce.Denial
	log    *enforce.DenialLog

	// counter counts the calls the kernel lets run, with
	// Options.CountKernel; counterErr is why it could not.
	counter    *kernelCounter
	counterErr error
	// snaps, where the kernel takes them (as root, once loaded: see
	// snapshots.go), are where notified threads wait, read with no system
	// call; the counts say where callers were found.
	snapshots               bool
	snaps                   atomic.Pointer[snapshot.Snapshots]
	loadingSnaps, stopping  bool
	fromSnapshots, fromProc atomic.Uint64

	// err is why serving stopped early, if it did.
	err  error
	done chan struct{}
}

// The supervisor answers on one thread, which receives each notification
// and decides it at once where it can: a call whose owner the call-chain
// cache knows, a loading image's start-up call, a mark. That is nearly
// every call, and deciding it on the receiving thread, woken on the
// caller's CPU (package notify), spares it a hand-over to another thread.
// The rest (a call chain never seen, the first call of a process, an
// exec) take an unwind or file reads, milliseconds at times: the
// receiving thread hands those to one of a few workers and goes on
// receiving, so that a slow call never holds up the calls of other
// threads and processes. A worker answers it all over, with its own
// stack buffer.

// workers is how many slow calls are decided at once.
func workers() int { return min(runtime.NumCPU(), 8) }

// worker is where a call is decided: its stack buffer, and whether it
// is the receiving thread, which must not wait (inline).
type worker struct {
	stack  []byte
	inline bool
}

func newSupervisor(l *notify.Listener, spec *compartment.Spec, opt Options, library string, ids *identities, win window, epochAt uint64) *supervisor {
	rt := attribute.DefaultRuntime()
	// The loader calls into the audit library on behalf of whoever loads
	// an object: its calls are the runtime's.
	rt[LibraryName] = true
	return &supervisor{
		l: l, spec: spec, ids: ids, win: win, epochAt: epochAt,
		objs:    attribute.NewObjects(rt),
		threads: map[int]*thread{}, procs: map[int]*process{}, saved: map[int]*saved{}, sweepAt: minSweep,
		tracer: newTracer(), stats: newStats(), library: library, mode: opt.Mode, denied: denials{}, log: opt.DenialLog, done: make(chan struct{}),
		execRule: opt.Exec,
	}
}

// errSlow is returned by the receiving thread's decisions that would
// have to wait: for an unwind, file reads, or another worker.
var errSlow = errors.New("cell: the call takes a worker")

// serve answers notifications until no task uses the filter or stop
// closes the listener. On a failure it closes the listener itself: the
// calls it can no longer answer fail with ENOSYS rather than wait.
func (s *supervisor) serve() {
	defer close(s.done)
	slow := make(chan *notify.Notification)
	errs := make([]error, workers()+1)
	var wg sync.WaitGroup
	for i := range workers() {
		wg.Go(func() {
			w := &worker{stack: make([]byte, stackMax)}
			for n := range slow {
				// A listener closed meanwhile (the program ended) has
				// failed the call with ENOSYS already.
				if err := s.answer(n, w); err != nil && !errors.Is(err, os.ErrClosed) && errs[i] == nil {
					errs[i] = err
					s.l.Close()
				}
			}
		})
	}
	inline := &worker{stack: make([]byte, stackMax), inline: true}
	var spare sync.Once
	errs[len(errs)-1] = s.l.Serve(func(n *notify.Notification) error {
		err := s.answer(n, inline)
		if errors.Is(err, errSlow) {
			spare.Do(spareProcessor)
			slow <- n
			return nil
		}
		return err
	})
	close(slow)
	wg.Wait()
	s.err = errors.Join(errs...)
}

// spareProcessor gives the runtime one processor more than there are
// CPUs, unless GOMAXPROCS says how many, once the receiving thread hands
// a call to a worker. It waits for calls in the kernel; while every other
// processor is taken (a worker checking an exec), the runtime's monitor
// takes the waiting thread's processor back each time, and then wakes
// every 20 µs for a millisecond or more: a fifth of the supervisor's
// time in a loop of execs. With a processor to spare it leaves the
// waiting thread alone, and sleeps. Not before: the extra processor's
// threads cost a short program's start 0.2 ms.
func spareProcessor() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(runtime.NumCPU() + 1)
	}
}

// stop closes the listener, waits for serve to return and releases what
// the supervisor holds.
func (s *supervisor) stop() {
	s.l.Close()
	<-s.done
	s.tracer.stop()
	s.stopSnapshots()
	for _, t := range s.threads {
		t.close()
	}
	for _, p := range s.procs {
		p.close()
	}
	s.objs.Close()
}

// answer decides one notification and answers it, on w. On the
// receiving thread, it returns errSlow, answering nothing, where a worker
// must decide.
func (s *supervisor) answer(n *notify.Notification, w *worker) error {
	if w.inline && s.needsWorker(n) {
		return errSlow
	}
	if isMark(n) {
		return s.answerMark(n)
	}
	if refused, err := s.refuseProcMem(n, w); refused {
		return err
	}
	if s.loadingCall(n) || s.loaderCacheUnmap(n) {
		decided := time.Since(n.Received)
		pending, err := s.reply(n, policy.ActAllow, nil)
		if pending {
			s.mu.Lock()
			s.stats.count(OwnerStartUp, n.Data.Nr, true, nil)
			s.stats.took(decided)
			s.mu.Unlock()
		}
		return err
	}
	act := s.spec.Verdict(n.Data.Arch, n.Data.Nr, n.Data.IP, n.Data.Args)
	supervised := act == compartment.Supervise
	var o owner
	var unattributed error
	switch {
	case supervised:
		o, act, unattributed = s.decide(n, w)
	case act != policy.ActAllow || isExec(n):
		// An exec the filter allows from a compartment's own code still
		// needs its caller: what it starts is bounded by it (execs.go).
		o = s.filterOwner(n, w)
	}
	if errors.Is(unattributed, errSlow) || errors.Is(o.err, errSlow) {
		return errSlow
	}
	if act != policy.ActAllow && s.exempt(n, o) {
		act = policy.ActAllow
	}
	if act != policy.ActAllow && s.mode != enforce.Audit && enforce.Aborting(n) {
		return enforce.Abort(s.l, n)
	}
	var why error
	var bound, program string
	if act == policy.ActAllow && isExec(n) {
		act, program, why = s.checkExec(n)
		switch {
		case errors.Is(why, errRetry):
			return nil
		case errors.Is(why, errFault):
			// The kernel's own answer to memory it cannot read: no
			// denial.
			return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Errno: unix.EFAULT}))
		}
		if why == nil {
			if bound, why = s.execBound(n, o, program); why != nil {
				act = policy.ActEPERM
			}
		}
		if why != nil && o.label == "" {
			o = s.filterOwner(n, w)
		}
	}
	var ring *ringSetup
	if act == policy.ActAllow && isRingSetup(n) {
		if ring, act, why = s.prepareRing(n); why != nil && o.label == "" {
			o = s.filterOwner(n, w)
		}
	}
	if act == policy.ActAllow && isExec(n) {
		s.execLetRun(n, bound)
	}
	// A call withdrawn meanwhile (a signal interrupted it, its thread was
	// killed) is neither counted nor logged: its thread may make it again.
	// Its time is taken before the answer: the listener wakes the caller
	// on the supervisor's CPU, so the answer returns only once the
	// caller, running, lets the CPU go (up to a millisecond of openssl's
	// start after the loader's last call), which is no wait of the
	// caller's.
	decided := time.Since(n.Received)
	pending, err := s.reply(n, act, ring)
	if !pending {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if supervised {
		s.stats.count(o.label, n.Data.Nr, act == policy.ActAllow, unattributed)
		s.stats.took(decided)
	}
	if act != policy.ActAllow {
		s.denied.count(o.label, n, act, why)
		s.logDenial(n, o.label, act)
	}
	return err
}

// reply answers n with act, as the mode has it: a call the policy stops
// runs in audit mode and fails with an errno in complain mode; an
// allowed io_uring_setup gets the ring the supervisor set up. It says
// whether the call was still waiting for the answer.
func (s *supervisor) reply(n *notify.Notification, act policy.Action, ring *ringSetup) (pending bool, err error) {
	switch {
	case act == policy.ActAllow && ring != nil:
		err = s.setupRing(n, ring)
	case act == policy.ActAllow || s.mode == enforce.Audit:
		err = s.l.Respond(notify.Response{ID: n.ID, Continue: true})
	case s.mode == enforce.Complain:
		err = s.l.Respond(notify.Response{ID: n.ID, Errno: enforce.ErrnoFor(act)})
	default:
		err = s.deny(n, act)
	}
	if errors.Is(err, notify.ErrNotPending) {
		return false, nil
	}
	return true, err
}

// needsWorker says whether n takes file or memory reads before it can be
// decided that would hold up other calls: an io_uring_setup, an open the
// supervisor checks for /proc/PID/mem, and an exec while other calls are
// queued. An exec alone, as in a shell's loop, is checked on the
// receiving thread, which would only wait for the worker's answer (a
// hand-over saved: 5 % of a loop of execs' time).
func (s *supervisor) needsWorker(n *notify.Notification) bool {
	if isExec(n) && !isMark(n) {
		return s.l.Pending()
	}
	return isRingSetup(n) || s.denyProcMem && isOpenCall(n)
}

// decide attributes a caller-dependent call and returns its owner and
// its verdict: allowed if the owner may make it, else the union's
// default. A call it cannot attribute is denied, and why is returned.
func (s *supervisor) decide(n *notify.Notification, w *worker) (owner, policy.Action, error) {
	o, err := s.owner(n, w)
	if errors.Is(err, errRetry) && s.l.Valid(n.ID) == nil {
		o, err = s.owner(n, w)
	}
	if errors.Is(err, errSlow) {
		return owner{}, policy.Action{}, err
	}
	if err != nil {
		return owner{label: OwnerUnattributed}, s.spec.Union.Default, err
	}
	if s.allows(o, n.Data.Nr) {
		return o, policy.ActAllow, nil
	}
	return o, s.spec.Union.Default, nil
}

// allows says whether o may make call nr. The runtime's own calls are
// bounded by the union alone, the filter having notified the call,
// unless the policy gives the runtime a compartment of its own (as
// package record writes one). The loader's start-up calls are no
// compartment's: exempt decides them. In an image bounded by a
// compartment (execs.go), that compartment decides.
func (s *supervisor) allows(o owner, nr uint32) bool {
	if _, ok := s.spec.Allowed[runtimeCompartment]; o.runtime && !o.startUp && !ok {
		return true
	}
	if b := s.boundOf(o.proc); b != "" && !o.runtime {
		return s.mayMake(o.proc, b, nr)
	}
	return s.mayMake(o.proc, o.compartment, nr)
}

// exempt says whether a call the policy stops runs all the same: the
// calls a program makes to end (enforce.Ending), the start-up calls of
// an image an exec has just started (startup.go), and the loader's
// unmapping of its cache.
func (s *supervisor) exempt(n *notify.Notification, o owner) bool {
	return enforce.Ending(n) || o.startUp && s.startingUp(o.proc, n) || unmapsLoaderCache(n)
}

// deny stops a call with the policy's action for calls no rule allows.
// An errno is the call's result; a kill, which a notification cannot
// give, is a SIGKILL sent while the call waits.
func (s *supervisor) deny(n *notify.Notification, act policy.Action) error {
	switch act.Kind {
	case policy.Errno:
		return s.l.Respond(notify.Response{ID: n.ID, Errno: syscall.Errno(act.Data)})
	case policy.Allow, policy.Log:
		return s.l.Respond(notify.Response{ID: n.ID, Continue: true})
	case policy.KillProcess, policy.KillThread, policy.Trap:
		return s.kill(n)
	}
	// Trace and user notification: what the kernel answers when no
	// tracer or supervisor listens.
	return s.l.Respond(notify.Response{ID: n.ID, Errno: unix.ENOSYS})
}

// kill kills the caller's process while its call waits.
func (s *supervisor) kill(n *notify.Notification) error {
	tgid, err := tgidOf(n.Pid)
	if err != nil {
		return s.l.Valid(n.ID)
	}
	pidfd, err := pidfdOpen(tgid)
	if err != nil {
		return s.l.Valid(n.ID)
	}
	defer unix.Close(pidfd)
	if err := s.l.Valid(n.ID); err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("cell: kill process %d: %w", tgid, err)
	}
	return nil
}

// ignoreGone drops the error of a notification whose thread is gone, or
// that a worker was still deciding when the program ended and stop
// closed the listener (its call was withdrawn, by a signal or the
// tracer, and the program went on to exit): nobody waits for it.
func ignoreGone(err error) error {
	if errors.Is(err, notify.ErrNotPending) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
