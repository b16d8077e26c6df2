package cell

import (
	"cmp"
	"errors"
	"slices"

	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/run/enforce"
	"github.com/syscell/syscell/syscalls"
)

// Denied is a kind of call the policy stops that the supervisor saw, and
// who made it: every such call but those the kernel kills for.
type Denied struct {
	// Owner is who made the calls, as Supervised names owners.
	Owner string `json:"owner"`
	enforce.Call
	// Why is, for a call the policy allows that syscell stops (an exec
	// that would run without the audit library), why.
	Why string `json:"why,omitempty"`
}

// kernelSpec is what the filter implements in mode: the spec, with every
// exec (exec.go) and io_uring_setup (uring.go) notified, and every call
// the spec stops notified too, for
// the supervisor to report and then fail (enforce and complain) or let run
// (audit); when enforcing, the kernel keeps its kills.
// Stopping actions all take precedence over allow, so the filter stops a
// call exactly when the spec does.
func kernelSpec(s *compartment.Spec, mode enforce.Mode) *compartment.Spec {
	k := *s
	r := &policy.Resolved{Tables: []*policy.Table{notifyRingSetup(notifyExec(s.Union))}, BadArch: s.BadArch}
	if mode == enforce.Enforce {
		r = enforce.Visible(r)
	} else {
		r = enforce.Override(r, compartment.Supervise)
	}
	k.Union, k.BadArch = r.Tables[0], r.BadArch
	return &k
}

type deniedKey struct {
	owner    string
	arch, nr uint32
}

// denials counts the denied calls the supervisor saw.
type denials map[deniedKey]*Denied

func (d denials) count(owner string, n *notify.Notification, act policy.Action, why error) {
	k := deniedKey{owner, n.Data.Arch, n.Data.Nr}
	c := d[k]
	if c == nil {
		c = &Denied{Owner: owner, Call: enforce.NewCall(n.Data.Arch, n.Data.Nr, n.Data.IP, act)}
		if why != nil {
			c.Why = why.Error()
		}
		d[k] = c
	}
	c.Count++
}

// list returns the denials sorted by owner, ABI and system call.
func (d denials) list() []Denied {
	out := make([]Denied, 0, len(d))
	for _, c := range d {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Denied) int {
		return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.ABI, b.ABI), cmp.Compare(a.Syscall, b.Syscall))
	})
	return out
}

// filterOwner finds who made a call the filter stopped without asking
// the supervisor: the compartment whose code made it, or, for code the
// filter did not tell apart (the runtime's, or an image an exec started),
// the owner the attribution rule finds. The owner of a call the
// receiving thread cannot attribute at once holds errSlow.
func (s *supervisor) filterOwner(n *notify.Notification, w *worker) owner {
	if name, supervise := s.spec.Layout.Owner(n.Data.IP); !supervise {
		return owner{compartment: name, label: name}
	}
	if n.Data.Arch != syscalls.AuditArchX86_64 || n.Data.Nr >= syscalls.X32Bit {
		return owner{label: OwnerUnattributed}
	}
	o, err := s.owner(n, w)
	if errors.Is(err, errSlow) {
		return owner{err: err}
	}
	if err != nil {
		return owner{label: OwnerUnattributed}
	}
	return o
}

// logDenial keeps the first denied call and logs each; s.mu is held.
func (s *supervisor) logDenial(n *notify.Notification, owner string, act policy.Action) {
	d := enforce.NewDenial(n, owner, act)
	if t, ok := s.threads[n.Pid]; ok && t.proc.servingSince != 0 {
		d.Serving = true
	}
	if s.mode == enforce.Audit {
		d.Action = "audit"
	}
	// Workers answer calls in parallel, and count them once answered:
	// the first is the first received.
	if s.first == nil || d.Time.Before(s.first.Time) {
		s.first = &d
	}
	s.log.Write(d)
}
