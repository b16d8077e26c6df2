package enforce

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Call is a kind of system call the policy denies, as the supervisor
// counted it.
type Call struct {
	// ABI is x86_64, x86 or x32; for another ABI, its audit arch in hex.
	ABI string `json:"abi"`
	// Syscall is the call's name, or its number when the ABI has none.
	Syscall string `json:"syscall"`
	Nr      uint32 `json:"nr"`
	// Count is how many times it was called.
	Count int `json:"count"`
	// FirstIP is the instruction pointer of the first call: the address
	// just after its system call instruction.
	FirstIP uint64 `json:"first_ip"`
	// Action is what Enforce mode does with the call.
	Action policy.Action `json:"action"`
}

// supervisor answers the notifications of one command.
type supervisor struct {
	l       *notify.Listener
	decide  *policy.Resolved
	mode    Mode
	shimPid int
	// execed is set once the shim's own execve has been let through.
	execed    bool
	seen      map[callKey]*Call
	killedFor *Call
	// first is the first call the policy stopped; log gets them all.
	first *Denial
	log   *DenialLog
	// err is why serving stopped early, if it did.
	err  error
	done chan struct{}
}

type callKey struct{ arch, nr uint32 }

func newSupervisor(l *notify.Listener, decide *policy.Resolved, mode Mode, shimPid int, log *DenialLog) *supervisor {
	return &supervisor{l: l, decide: decide, mode: mode, shimPid: shimPid, seen: map[callKey]*Call{}, log: log, done: make(chan struct{})}
}

// serve answers notifications until no task uses the filter or stop closes
// the listener. On a failure it closes the listener itself, so that the
// calls it can no longer answer fail with ENOSYS rather than wait forever.
func (s *supervisor) serve() {
	defer close(s.done)
	s.err = s.l.Serve(s.answer)
}

// stop closes the listener and waits for serve to return.
func (s *supervisor) stop() {
	s.l.Close()
	<-s.done
}

// answer decides a notification and answers it.
func (s *supervisor) answer(n *notify.Notification) error {
	if !s.execed {
		return s.letShimExec(n)
	}
	act := s.decide.Decide(n.Data.Arch, n.Data.Nr, n.Data.Args)
	if lets(act) || s.mode == Enforce && Ending(n) {
		return s.respond(notify.Response{ID: n.ID, Continue: true})
	}
	if s.mode == Enforce && Aborting(n) {
		return Abort(s.l, n)
	}
	c := s.record(n, act)
	s.logDenial(n, act)
	switch {
	case s.mode == Audit:
		return s.respond(notify.Response{ID: n.ID, Continue: true})
	case s.mode == Enforce && Kills(act):
		killed := *c
		s.killedFor = &killed
		return s.kill(n)
	}
	return s.respond(notify.Response{ID: n.ID, Errno: ErrnoFor(act)})
}

// letShimExec continues the first notified call, which is the shim's
// execve: until that execve, only the shim's exec'ing thread is filtered,
// and it makes no other call the filter sees.
func (s *supervisor) letShimExec(n *notify.Notification) error {
	if n.Pid != s.shimPid || n.Data.Arch != syscalls.AuditArchX86_64 || n.Data.Nr != unix.SYS_EXECVE {
		return fmt.Errorf("enforce: the first notified call is %s from thread %d, not the execve of the shim %d", describe(n.Data.Arch, n.Data.Nr), n.Pid, s.shimPid)
	}
	s.execed = true
	return s.respond(notify.Response{ID: n.ID, Continue: true})
}

// respond answers, ignoring a call that stopped waiting: its thread was
// killed, or a signal interrupted it and the call will come again.
func (s *supervisor) respond(r notify.Response) error {
	if err := s.l.Respond(r); err != nil && !errors.Is(err, notify.ErrNotPending) {
		return err
	}
	return nil
}

// Kills reports whether the kernel would end the caller for a.
func Kills(a policy.Action) bool {
	return a.Kind == policy.KillProcess || a.Kind == policy.KillThread || a.Kind == policy.Trap
}

// ErrnoFor is the errno a denied call fails with when the supervisor
// answers it: the policy's own, ENOSYS where the policy traces or notifies
// (as when no tracer or supervisor listens), else EPERM.
func ErrnoFor(a policy.Action) syscall.Errno {
	switch a.Kind {
	case policy.Errno:
		return syscall.Errno(a.Data)
	case policy.Trace, policy.UserNotify:
		return unix.ENOSYS
	}
	return unix.EPERM
}

// kill ends the caller's process while its call is suspended, so the call
// never runs. A notification cannot kill; SIGKILL can. The pidfd is taken
// before Valid confirms that the caller still waits, so the signal cannot
// reach a process that reused the id. If the process cannot be killed, the
// call fails with EPERM and the supervisor stops.
func (s *supervisor) kill(n *notify.Notification) error {
	err := s.signalCaller(n)
	if err == nil {
		return nil
	}
	s.respond(notify.Response{ID: n.ID, Errno: unix.EPERM})
	return fmt.Errorf("enforce: kill the command for %s: %w", describe(n.Data.Arch, n.Data.Nr), err)
}

func (s *supervisor) signalCaller(n *notify.Notification) error {
	tgid, err := processOf(n.Pid)
	if err != nil {
		return err
	}
	pidfd, err := unix.PidfdOpen(tgid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", tgid, err)
	}
	defer unix.Close(pidfd)
	if err := s.l.Valid(n.ID); errors.Is(err, notify.ErrNotPending) {
		return nil
	} else if err != nil {
		return err
	}
	if err := unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("SIGKILL %d: %w", tgid, err)
	}
	return nil
}

// processOf returns the id of the process of thread tid.
func processOf(tid int) (int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s has no Tgid", f.Name())
}

// logDenial notes the first denied call and logs each.
func (s *supervisor) logDenial(n *notify.Notification, act policy.Action) {
	d := NewDenial(n, "", act)
	if s.mode == Audit {
		d.Action = "audit"
	}
	if s.first == nil {
		s.first = &d
	}
	s.log.Write(d)
}

// record counts a denied call.
func (s *supervisor) record(n *notify.Notification, act policy.Action) *Call {
	k := callKey{n.Data.Arch, n.Data.Nr}
	c := s.seen[k]
	if c == nil {
		call := NewCall(n.Data.Arch, n.Data.Nr, n.Data.IP, act)
		c = &call
		s.seen[k] = c
	}
	c.Count++
	return c
}

// calls lists the recorded calls by ABI, then name.
func (s *supervisor) calls() []Call {
	out := make([]Call, 0, len(s.seen))
	for _, c := range s.seen {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.ABI, b.ABI), cmp.Compare(a.Syscall, b.Syscall), cmp.Compare(a.Nr, b.Nr))
	})
	return out
}

// names names the ABI and the call of seccomp_data's arch and nr, as
// policy.Resolved.Decide tells ABIs apart.
// NewCall describes the first of the calls nr of ABI arch made from ip,
// which the policy stops with act; Count is 0.
func NewCall(arch, nr uint32, ip uint64, act policy.Action) Call {
	abi, name := names(arch, nr)
	return Call{ABI: abi, Syscall: name, Nr: nr, FirstIP: ip, Action: act}
}

func names(arch, nr uint32) (abi, name string) {
	var a syscalls.Arch
	switch {
	case arch == syscalls.AuditArchI386:
		a = syscalls.I386
	case arch == syscalls.AuditArchX86_64 && nr >= syscalls.X32Bit:
		a = syscalls.X32
	case arch == syscalls.AuditArchX86_64:
		a = syscalls.X86_64
	default:
		return fmt.Sprintf("%#x", arch), strconv.FormatUint(uint64(nr), 10)
	}
	if name, ok := syscalls.Name(a, nr); ok {
		return a.String(), name
	}
	return a.String(), strconv.FormatUint(uint64(nr), 10)
}

func describe(arch, nr uint32) string {
	abi, name := names(arch, nr)
	return abi + " " + name
}
