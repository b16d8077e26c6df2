package privilege

import (
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// WholeProcessName names the one compartment of a policy without
// compartments.
const WholeProcessName = "whole process"

// fromPolicy takes a syscell policy's compartments, as written, and what
// its rules may let run outside them, which only the union counts. A
// policy without compartments (every OCI profile among them) is one
// compartment: the syscalls its rules may let run. Its reduction is 0.
// With phases, each compartment's serving set is what it keeps once
// serving; the rules are not narrowed, so the whole-process compartment
// keeps all of its calls.
func fromPolicy(p *policy.Policy, f Format) *Allowlists {
	a := &Allowlists{Source: p.Source, Format: f, ServingFrom: set(p.ServingFrom)}
	for _, c := range p.Compartments {
		a.Compartments = append(a.Compartments, newCompartment(Compartment{
			Name: c.Name, Path: c.Path, BuildID: c.BuildID, Syscalls: c.Syscalls, Serving: p.ServingCalls(c),
		}))
	}
	if len(a.Compartments) == 0 {
		a.WholeProcess = true
		a.Compartments = []Compartment{newCompartment(Compartment{Name: WholeProcessName, Syscalls: mayRun(p)})}
		return a
	}
	a.Outside = mayRun(p)
	return a
}

// mayRun lists the syscalls that p's filter may let run, on the ABIs it
// covers (x86_64 when it names none). The metric is a worst case, so a
// call counts unless the filter stops it whatever its arguments: argument
// conditions are taken to hold for some arguments (and never to cover
// every argument together), and user-notify and trace, which hand the call
// to a supervisor or tracer that may run it, count as letting it run.
func mayRun(p *policy.Policy) []string {
	arches := p.Arches
	if len(arches) == 0 {
		arches = []syscalls.Arch{syscalls.X86_64}
	}
	var names []string
	for _, t := range p.Resolve(arches).Tables {
		for _, nr := range syscalls.Numbers(t.Arch) {
			if mayRunCall(t.Default, t.Syscalls[nr]) {
				name, _ := syscalls.Name(t.Arch, nr)
				names = append(names, name)
			}
		}
	}
	return names
}

// mayRunCall decides for one syscall. A rule that stops the call under no
// condition decides it, since stopping actions take precedence over those
// that let a call run; otherwise the call may run if some rule lets it,
// or if the default does (for arguments no rule matches).
func mayRunCall(def policy.Action, branches []policy.Branch) bool {
	runs := lets(def)
	for _, b := range branches {
		if !lets(b.Action) && len(b.Conds) == 0 {
			return false
		}
		runs = runs || lets(b.Action)
	}
	return runs
}

// lets reports whether a call the filter answers with a may run.
func lets(a policy.Action) bool {
	switch a.Kind {
	case policy.Allow, policy.Log, policy.UserNotify, policy.Trace:
		return true
	}
	return false
}
