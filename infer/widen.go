package infer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/record"
)

// Part is the part of the inferred calls a policy is widened with.
type Part uint8

// Parts of the inferred calls.
const (
	// PartAll is every call inferred for a compartment.
	PartAll Part = iota
	// PartExit is what the paths that end the program can make: the
	// calls of the runtime's functions that never return (exit, abort,
	// assertion failures, err), which flush stdio, run exit handlers
	// and write a last message.
	PartExit
)

// ParsePart reads "static" or "static:all" (PartAll) and "static:exit"
// (PartExit).
func ParsePart(s string) (Part, error) {
	switch s {
	case "static", "static:all":
		return PartAll, nil
	case "static:exit":
		return PartExit, nil
	}
	return 0, fmt.Errorf("unknown widening %q (want static, static:all or static:exit)", s)
}

// Widen adds to a policy (a recorded one) the part of the inferred calls
// of each of its compartments, matched by path and build-id, and to its
// rules the calls that adds: recorded ∪ inferred. A policy without
// compartments gets the part of the union of all. [runtime] gets the
// runtime's inferred calls with PartAll only. Rules that deny a call
// still deny it.
func Widen(p *policy.Policy, res *Result, part Part) *policy.Policy {
	out := *p
	out.Compartments = slices.Clone(p.Compartments)
	out.VDSO = union(p.VDSO, res.VDSO)
	added := map[string]bool{}
	pick := func(c Compartment) Calls {
		if part == PartExit {
			return c.Ending
		}
		return c.Calls
	}
	for i := range out.Compartments {
		c := &out.Compartments[i]
		var calls []string
		switch {
		case c.Name == record.RuntimeName && part == PartAll:
			calls = res.Runtime.Names()
		default:
			for _, ic := range res.Compartments {
				if ic.Path == c.Path && (c.BuildID == "" || ic.BuildID == c.BuildID) {
					calls = pick(ic).Names()
				}
			}
		}
		c.Syscalls = union(c.Syscalls, calls)
		for _, n := range calls {
			added[n] = true
		}
		c.Reach = reachOf(c, res)
	}
	if len(p.Compartments) == 0 {
		for _, ic := range res.Compartments {
			for _, n := range pick(ic).Names() {
				added[n] = true
			}
		}
	}
	if len(added) > 0 {
		out.Rules = append(slices.Clone(p.Rules), policy.Rule{Syscalls: sortedSetNames(added), Action: policy.ActAllow,
			Pos: policy.Pos{File: "--widen"}})
	}
	return &out
}

// reachOf is what compartment c's object can reach, as inferred, nil
// where no object of the inference is c's.
func reachOf(c *policy.Compartment, res *Result) []string {
	if c.Name == record.RuntimeName {
		return res.Runtime.Names()
	}
	for _, ic := range res.Compartments {
		if ic.Path == c.Path && (c.BuildID == "" || ic.BuildID == c.BuildID) {
			return append([]string{}, ic.Calls.Names()...)
		}
	}
	return c.Reach
}

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedSetNames(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
