package cell

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/enforce"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
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

	// err is why serving stopped early, if it did.
	err  error
	done chan struct{}
}

// workers is how many notifications the supervisor answers at once: one
// per CPU, so that the calls of several threads or processes are not
// queued behind each other. (A lone caller pays for it: the next worker
// is woken to wait as each notification is taken, some 8 % of a
// supervised call here.)
func workers() int { return min(runtime.NumCPU(), 8) }

func newSupervisor(l *notify.Listener, spec *compartment.Spec, opt Options, library string, ids *identities, win window, epochAt uint64) *supervisor {
	rt := attribute.DefaultRuntime()
	// The loader calls into the audit library on behalf of whoever loads
	// an object: its calls are the runtime's.
	rt[LibraryName] = true
	return &supervisor{
		l: l, spec: spec, ids: ids, win: win, epochAt: epochAt,
		objs:    attribute.NewObjects(rt),
		threads: map[int]*thread{}, procs: map[int]*process{}, saved: map[int]*saved{}, sweepAt: minSweep,
		tracer: newTracer(), stats: stats{}, library: library, mode: opt.Mode, denied: denials{}, log: opt.DenialLog, done: make(chan struct{}),
		execRule: opt.Exec,
	}
}

// serve answers notifications until no task uses the filter or stop
// closes the listener. On a failure it closes the listener itself: the
// calls it can no longer answer fail with ENOSYS rather than wait.
func (s *supervisor) serve() {
	defer close(s.done)
	errs := make([]error, workers())
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			stack := make([]byte, stackMax)
			errs[i] = s.l.Serve(func(n *notify.Notification) error { return s.answer(n, stack) })
		})
	}
	wg.Wait()
	s.err = errors.Join(errs...)
}

// stop closes the listener, waits for serve to return and releases what
// the supervisor holds.
func (s *supervisor) stop() {
	s.l.Close()
	<-s.done
	s.tracer.stop()
	for _, t := range s.threads {
		t.syscall.Close()
	}
	for _, p := range s.procs {
		p.close()
	}
	s.objs.Close()
}

// answer decides one notification and answers it, copying the caller's
// stack into stack.
func (s *supervisor) answer(n *notify.Notification, stack []byte) error {
	if isMark(n) {
		return s.answerMark(n)
	}
	if s.loadingCall(n) {
		s.mu.Lock()
		s.stats.count(OwnerStartUp, n.Data.Nr, true, nil)
		s.mu.Unlock()
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Continue: true}))
	}
	act := s.spec.Verdict(n.Data.Arch, n.Data.Nr, n.Data.IP, n.Data.Args)
	supervised := act == compartment.Supervise
	var o owner
	var unattributed error
	switch {
	case supervised:
		o, act, unattributed = s.decide(n, stack)
	case act != policy.ActAllow:
		o = s.filterOwner(n, stack)
	}
	if act != policy.ActAllow && s.exempt(n, o) {
		act = policy.ActAllow
	}
	if act != policy.ActAllow && s.mode != enforce.Audit && enforce.Aborting(n) {
		return enforce.Abort(s.l, n)
	}
	var why error
	var bound string
	if act == policy.ActAllow && isExec(n) {
		act, why = s.checkExec(n)
		if errors.Is(why, errRetry) {
			return nil
		}
		if why == nil {
			if bound, why = s.execBound(n, o); why != nil {
				act = policy.ActEPERM
			}
		}
		if why != nil && o.label == "" {
			o = s.filterOwner(n, stack)
		}
	}
	// The notification still pending proves that the thread read while
	// deciding was the caller, not a later thread with its id; a call
	// withdrawn meanwhile (a signal interrupted it) is neither counted
	// nor answered.
	if err := s.l.Valid(n.ID); err != nil {
		return ignoreGone(err)
	}
	s.mu.Lock()
	if supervised {
		s.stats.count(o.label, n.Data.Nr, act == policy.ActAllow, unattributed)
	}
	if act != policy.ActAllow {
		s.denied.count(o.label, n, act, why)
		s.logDenial(n, o.label, act)
	}
	s.mu.Unlock()
	if act == policy.ActAllow {
		if isExec(n) {
			s.execLetRun(n, bound)
		}
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Continue: true}))
	}
	switch s.mode {
	case enforce.Audit:
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Continue: true}))
	case enforce.Complain:
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Errno: enforce.ErrnoFor(act)}))
	}
	return s.deny(n, act)
}

// decide attributes a caller-dependent call and returns its owner and
// its verdict: allowed if the owner may make it, else the union's
// default. A call it cannot attribute is denied, and why is returned.
func (s *supervisor) decide(n *notify.Notification, stack []byte) (owner, policy.Action, error) {
	o, err := s.owner(n, stack)
	if errors.Is(err, errRetry) && s.l.Valid(n.ID) == nil {
		o, err = s.owner(n, stack)
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
		return s.boundAllows(b, nr)
	}
	return s.spec.Allowed[o.compartment][nr]
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
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Errno: syscall.Errno(act.Data)}))
	case policy.Allow, policy.Log:
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Continue: true}))
	case policy.KillProcess, policy.KillThread, policy.Trap:
		return s.kill(n)
	}
	// Trace and user notification: what the kernel answers when no
	// tracer or supervisor listens.
	return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Errno: unix.ENOSYS}))
}

// kill kills the caller's process while its call waits.
func (s *supervisor) kill(n *notify.Notification) error {
	tgid, err := tgidOf(n.Pid)
	if err != nil {
		return ignoreGone(s.l.Valid(n.ID))
	}
	pidfd, err := pidfdOpen(tgid)
	if err != nil {
		return ignoreGone(s.l.Valid(n.ID))
	}
	defer unix.Close(pidfd)
	if err := s.l.Valid(n.ID); err != nil {
		return ignoreGone(err)
	}
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("cell: kill process %d: %w", tgid, err)
	}
	return nil
}

// ignoreGone drops the error of a notification whose thread is gone, or
// whose answer comes after another worker saw the last task go and the
// listener was closed.
func ignoreGone(err error) error {
	if errors.Is(err, notify.ErrNotPending) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
