package enforce

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// lets reports whether the kernel runs a call its filter answers with a.
func lets(a policy.Action) bool { return a.Kind == policy.Allow || a.Kind == policy.Log }

// Override returns a copy of r in which every action that stops a call (the
// rules', the defaults and the bad-arch action) is act. Actions that let a
// call run stay as they are. Since every stopping action takes precedence
// over allow and log, a call is stopped by the copy exactly when it is by r.
func Override(r *policy.Resolved, act policy.Action) *policy.Resolved {
	return mapActions(r, func(a policy.Action) policy.Action {
		if lets(a) {
			return a
		}
		return act
	})
}

// mapActions copies r with f applied to every action.
func mapActions(r *policy.Resolved, f func(policy.Action) policy.Action) *policy.Resolved {
	out := &policy.Resolved{Source: r.Source, BadArch: f(r.BadArch)}
	for _, t := range r.Tables {
		c := &policy.Table{Arch: t.Arch, Default: f(t.Default), Syscalls: make(map[uint32][]policy.Branch, len(t.Syscalls))}
		for nr, branches := range t.Syscalls {
			bs := make([]policy.Branch, len(branches))
			for i, b := range branches {
				bs[i] = policy.Branch{Action: f(b.Action), Conds: b.Conds, Pos: b.Pos}
			}
			c.Syscalls[nr] = bs
		}
		out.Tables = append(out.Tables, c)
	}
	return out
}

// plan is what Run installs for a policy in a mode.
type plan struct {
	// decide is the policy as enforced: the supervisor decides by it.
	decide *policy.Resolved
	// kernel is what the installed program implements: it notifies
	// every x86_64 execve (see the package documentation) and every
	// call the supervisor is to decide or report.
	kernel *policy.Resolved
}

func newPlan(r *policy.Resolved, mode Mode) (*plan, error) {
	if table(r, syscalls.X86_64) == nil {
		return nil, fmt.Errorf("enforce: %s: the policy must cover x86_64, the ABI the command is started through", r.Source)
	}
	kernel := Visible(r)
	if mode != Enforce {
		kernel = Override(r, policy.Action{Kind: policy.UserNotify})
	}
	return &plan{decide: r, kernel: notifyExecve(kernel)}, nil
}

// Visible returns r with every action that stops a call without killing
// its caller turned into a notification, so that the supervisor sees each
// denial, reports it and answers it as r would (Ending calls aside).
// Allowed calls keep their paths, cacheable where they were; kills stay
// the kernel's, whose only trace is the program's death by SIGSYS.
func Visible(r *policy.Resolved) *policy.Resolved {
	return mapActions(r, func(a policy.Action) policy.Action {
		if lets(a) || Kills(a) {
			return a
		}
		return policy.Action{Kind: policy.UserNotify}
	})
}

func table(r *policy.Resolved, a syscalls.Arch) *policy.Table {
	for _, t := range r.Tables {
		if t.Arch == a {
			return t
		}
	}
	return nil
}

// notifyExecve returns a copy of r whose x86_64 table notifies every
// execve.
func notifyExecve(r *policy.Resolved) *policy.Resolved {
	out := mapActions(r, func(a policy.Action) policy.Action { return a })
	table(out, syscalls.X86_64).Syscalls[unix.SYS_EXECVE] = []policy.Branch{{Action: policy.Action{Kind: policy.UserNotify}}}
	return out
}
