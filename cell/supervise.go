package cell

import (
	"errors"
	"fmt"
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
// verdict while the caller waits.
type supervisor struct {
	l       *notify.Listener
	spec    *compartment.Spec
	ids     *identities
	win     window
	epochAt uint64
	objs    *attribute.Objects
	threads map[int]*thread
	procs   map[int]*process
	// sweepAt is how many thread records trigger a sweep of the dead.
	sweepAt int
	// saved are registers read with ptrace, by thread, for the call the
	// thread makes again.
	saved  map[int]*saved
	tracer *tracer
	// stack is the buffer thread stacks are copied into.
	stack []byte
	stats stats
	// library is the audit library, which every exec must load.
	library string
	// mode is what happens to the calls the policy stops; denied counts
	// those the supervisor saw.
	mode   enforce.Mode
	denied denials
	// err is why serving stopped early, if it did.
	err  error
	done chan struct{}
}

func newSupervisor(l *notify.Listener, spec *compartment.Spec, mode enforce.Mode, library string, ids *identities, win window, epochAt uint64) *supervisor {
	rt := attribute.DefaultRuntime()
	// The loader calls into the audit library on behalf of whoever loads
	// an object: its calls are the runtime's.
	rt[LibraryName] = true
	return &supervisor{
		l: l, spec: spec, ids: ids, win: win, epochAt: epochAt,
		objs:    attribute.NewObjects(rt),
		threads: map[int]*thread{}, procs: map[int]*process{}, saved: map[int]*saved{}, sweepAt: minSweep,
		tracer: newTracer(), stack: make([]byte, stackMax),
		stats: stats{}, library: library, mode: mode, denied: denials{}, done: make(chan struct{}),
	}
}

// serve answers notifications until no task uses the filter or stop
// closes the listener. On a failure it closes the listener itself: the
// calls it can no longer answer fail with ENOSYS rather than wait.
func (s *supervisor) serve() {
	defer close(s.done)
	s.err = s.l.Serve(s.answer)
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

// answer decides one notification and answers it.
func (s *supervisor) answer(n *notify.Notification) error {
	act := s.spec.Verdict(n.Data.Arch, n.Data.Nr, n.Data.IP, n.Data.Args)
	supervised := act == compartment.Supervise
	var label string
	var unattributed error
	if supervised {
		var o owner
		o, act, unattributed = s.decide(n)
		label = o.label
	} else if act != policy.ActAllow {
		label = s.filterOwner(n)
	}
	var why error
	if act == policy.ActAllow && isExec(n) {
		if why = checkExec(n, s.library); why != nil {
			act, label = policy.ActEPERM, s.filterOwner(n)
		}
	}
	// The notification still pending proves that the thread read while
	// deciding was the caller, not a later thread with its id; a call
	// withdrawn meanwhile (a signal interrupted it) is neither counted
	// nor answered.
	if err := s.l.Valid(n.ID); err != nil {
		return ignoreGone(err)
	}
	if supervised {
		s.stats.count(label, n.Data.Nr, act == policy.ActAllow, unattributed)
	}
	if act == policy.ActAllow {
		return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Continue: true}))
	}
	s.denied.count(label, n, act, why)
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
func (s *supervisor) decide(n *notify.Notification) (owner, policy.Action, error) {
	o, err := s.owner(n)
	if errors.Is(err, errRetry) && s.l.Valid(n.ID) == nil {
		o, err = s.owner(n)
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
// package record writes one); the loader's start-up calls always are,
// as package record leaves them out of every compartment.
func (s *supervisor) allows(o owner, nr uint32) bool {
	if _, ok := s.spec.Allowed[runtimeCompartment]; o.startUp || o.runtime && !ok {
		return true
	}
	return s.spec.Allowed[o.compartment][nr]
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

// ignoreGone drops the error of a notification whose thread is gone.
func ignoreGone(err error) error {
	if errors.Is(err, notify.ErrNotPending) {
		return nil
	}
	return err
}
