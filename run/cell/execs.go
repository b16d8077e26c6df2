package cell

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
)

// An exec never widens what the compartment that makes it may do. The
// program it starts runs with its own compartments only if the policy
// lets that compartment start it (policy.Compartment.Exec, which syscell
// record writes for every exec it saw); any other program runs bounded
// by the calling compartment: every call of its code is allowed only if
// the caller may make it. Its audit library binds all its objects to
// the caller's slot (the bound mark, startup.go), so that the kernel
// decides their calls with the caller's rights, and the supervisor
// applies the bound to the calls it decides, for the process and every
// process it forks, and to what they execute in turn. ExecDeny instead
// fails such an exec with EPERM.

// ExecRule is what happens to an exec of a program the policy does not
// let its caller start with its own compartments.
type ExecRule int

// The rules for such execs.
const (
	// ExecBound runs the program bounded by the calling compartment.
	ExecBound ExecRule = iota
	// ExecDeny fails the exec with EPERM.
	ExecDeny
)

// ParseExecRule reads "bound" or "deny".
func ParseExecRule(s string) (ExecRule, error) {
	switch s {
	case "bound":
		return ExecBound, nil
	case "deny":
		return ExecDeny, nil
	}
	return 0, fmt.Errorf("unknown exec rule %q (want bound or deny)", s)
}

// errNotGranted is why an exec under ExecDeny fails.
var errNotGranted = fmt.Errorf("the policy does not let the calling compartment start that program (exec in its [[compartment]]), and --exec deny is set")

// execBound decides the bound of the image the notified exec, by owner
// o, starts: the bound o's own image has; none where the policy grants
// o the program the exec loads; else o's compartment, or, under
// ExecDeny, a refusal.
func (s *supervisor) execBound(n *notify.Notification, o owner, program string) (string, error) {
	if o.proc == nil {
		// An owner found from the instruction pointer alone.
		if t, err := s.thread(n.Pid); err == nil {
			o.proc = t.proc
		}
	}
	if b := s.boundOf(o.proc); b != "" {
		return b, nil
	}
	caller := o.compartment
	if _, ok := s.spec.Allowed[caller]; !ok {
		// The runtime's own exec (posix_spawn's child, whose caller no
		// unwind sees past), in a policy that gives the runtime no
		// compartment: the rules bound it, as they bound the runtime.
		return "", nil
	}
	if s.granted(program, caller) {
		return "", nil
	}
	if s.execRule == ExecDeny {
		return "", errNotGranted
	}
	return caller, nil
}

// granted says whether the policy lets compartment caller start program
// with its own compartments (by its executable's compartment, or by its
// path where it has none).
func (s *supervisor) granted(program, caller string) bool {
	grants := s.execs[caller]
	if len(grants) == 0 || program == "" {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(program, &st); err != nil {
		return false
	}
	obj, ok := s.objs.Known(st.Dev, st.Ino)
	if !ok {
		// The object is named as the caller's file system names it,
		// not by the /proc path the supervisor reached it through.
		name, err := filepath.EvalSymlinks(program)
		if err != nil {
			name = program
		}
		obj = s.objs.File(st.Dev, st.Ino, name, program)
	}
	if comp, ok := s.ids.compartmentOf(obj); ok {
		return grants[comp]
	}
	// An executable with no compartment, granted by its path.
	return grants[obj.Path]
}

// boundOf is the compartment that bounds p's image, "" for none.
func (s *supervisor) boundOf(p *process) string {
	if p == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.bound
}

// inheritedBound is the bound of the nearest ancestor of process tgid
// the supervisor knows: a process a bounded image forks is bounded
// alike. s.mu is held. An orphan reparented before it made a supervised
// call has lost its lineage (docs/THREAT-MODEL.md).
func (s *supervisor) inheritedBound(tgid int) string {
	if p, _ := s.nearestKnown(tgid); p != nil {
		return p.bound
	}
	return ""
}

// nearestKnown is the nearest ancestor of process tgid the supervisor
// knows, alive, and its child on the way to tgid; nil where none is.
// The walk ends at the supervisor's own process: no process it
// supervises is its ancestor (they start after it, as its children or by
// connecting to it), so the program it started learns at once that it
// has no known ancestor, instead of reading the status of every process
// up to init while it waits to start. s.mu is held.
func (s *supervisor) nearestKnown(tgid int) (*process, int) {
	pid := tgid
	for range maxAncestors {
		ppid, err := parentOf(pid)
		if err != nil || ppid <= 1 || ppid == os.Getpid() {
			return nil, 0
		}
		if p, ok := s.procs[ppid]; ok && !p.exited() {
			return p, pid
		}
		pid = ppid
	}
	return nil, 0
}

// maxAncestors bounds the walk up a process's ancestors.
const maxAncestors = 16

// grantsOf maps each compartment of p to the compartments it may start.
func grantsOf(p *policy.Policy) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, c := range p.Compartments {
		for _, name := range c.Exec {
			if out[c.Name] == nil {
				out[c.Name] = map[string]bool{}
			}
			out[c.Name][name] = true
		}
	}
	return out
}
