package policy

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/syscell/syscell/iouring"
	"github.com/syscell/syscell/syscalls"
)

// Validate checks a policy as Parse does, for policies built by other means:
// every rule names at least one syscall; syscall names are known on some x86
// ABI; conditions are well formed; no syscall is given two different actions
// under the same conditions; io_uring operations are known; compartments
// have distinct names. The error is
// an *Error at the first offending rule or compartment.
func (p *Policy) Validate() error {
	if err := p.validateRules(); err != nil {
		return err
	}
	for _, op := range p.IOURing {
		if err := checkIOURing(op); err != nil {
			return errorAt(Pos{File: p.Source}, "%v", err)
		}
	}
	for _, name := range p.ServingFrom {
		if err := checkSyscall(name); err != nil {
			return errorAt(Pos{File: p.Source}, "serving-from: %v", err)
		}
	}
	for _, name := range p.VDSO {
		if err := checkSymbol(name); err != nil {
			return errorAt(Pos{File: p.Source}, "vdso: %v", err)
		}
	}
	return p.validateCompartments()
}

// checkSymbol accepts the names of C functions, as the vDSO exports
// them: a policy names no other.
func checkSymbol(name string) error {
	for i, c := range []byte(name) {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return fmt.Errorf("%q is no C function's name", name)
		}
	}
	if name == "" {
		return fmt.Errorf("an empty name is no C function's")
	}
	return nil
}

// checkIOURing accepts the names of io_uring operations.
func checkIOURing(name string) error {
	if _, ok := iouring.Lookup(name); !ok {
		return fmt.Errorf("unknown io_uring operation %q", name)
	}
	return nil
}

func (p *Policy) validateRules() error {
	// first remembers, per syscall and set of conditions, the rule that
	// first gave it an action.
	type branch struct{ name, conds string }
	first := map[branch]*Rule{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if err := r.check(); err != nil {
			return err
		}
		conds := condSetKey(r.Conds)
		for _, name := range r.Syscalls {
			prev, ok := first[branch{name, conds}]
			if !ok {
				first[branch{name, conds}] = r
				continue
			}
			if prev.Action != r.Action {
				return errorAt(r.Pos, "conflicting actions for %q: %s here, %s at %s, under the same conditions",
					name, r.Action, prev.Action, where(prev.Pos, r.Pos))
			}
		}
	}
	return nil
}

func (r *Rule) check() error {
	if len(r.Syscalls) == 0 {
		return errorAt(r.Pos, "rule has no syscalls")
	}
	for _, name := range r.Syscalls {
		if err := checkSyscall(name); err != nil {
			return errorAt(r.Pos, "%v", err)
		}
	}
	for _, c := range r.Conds {
		if err := c.check(); err != nil {
			return errorAt(r.Pos, "%v", err)
		}
	}
	return nil
}

// check holds a condition to what ParseCond accepts, by reading back what
// String writes: one definition of a well-formed condition.
func (c Cond) check() error {
	if c.Op > MaskedEq {
		return fmt.Errorf("condition on arg%d: unknown operator %d", c.Arg, c.Op)
	}
	_, err := ParseCond(c.String())
	return err
}

func (p *Policy) validateCompartments() error {
	first := map[string]Pos{}
	for _, c := range p.Compartments {
		if c.Name == "" {
			return errorAt(c.Pos, "compartment has no name")
		}
		if prev, dup := first[c.Name]; dup {
			return errorAt(c.Pos, "duplicate compartment %q (first at %s)", c.Name, where(prev, c.Pos))
		}
		first[c.Name] = c.Pos
		for _, name := range c.Syscalls {
			if err := checkSyscall(name); err != nil {
				return errorAt(c.Pos, "compartment %q: %v", c.Name, err)
			}
		}
		if err := p.checkServing(c); err != nil {
			return err
		}
	}
	for _, c := range p.Compartments {
		for _, name := range c.Exec {
			if _, ok := first[name]; !ok && !filepath.IsAbs(name) {
				return errorAt(c.Pos, "compartment %q: exec names %q, which is no compartment and no absolute path", c.Name, name)
			}
		}
	}
	return nil
}

// checkServing accepts a compartment's serving calls where the policy
// has phases, and only calls the compartment may make at all: serving
// narrows what a compartment may do, never widens it.
func (p *Policy) checkServing(c Compartment) error {
	if c.Serving == nil {
		return nil
	}
	if len(p.ServingFrom) == 0 {
		return errorAt(c.Pos, "compartment %q: serving calls in a policy with no serving-from", c.Name)
	}
	for _, name := range c.Serving {
		if !slices.Contains(c.Syscalls, name) {
			return errorAt(c.Pos, "compartment %q: serving names %q, which its syscalls do not", c.Name, name)
		}
	}
	return nil
}

// checkSyscall accepts names some x86 ABI knows. Resolve drops a name on the
// ABIs that lack it, so "chown32" suits a policy that also covers x86_64.
func checkSyscall(name string) error {
	if !syscalls.Known(name) {
		return fmt.Errorf("unknown syscall %q", name)
	}
	return nil
}

// where names an earlier position as briefly as the later one allows.
func where(earlier, here Pos) string {
	if earlier.File == here.File && earlier.Line != 0 {
		return fmt.Sprintf("line %d", earlier.Line)
	}
	return earlier.String()
}

// condSetKey is the same for condition lists that hold the same conditions,
// in any order and repeated or not: all of them must hold either way.
func condSetKey(conds []Cond) string {
	return fmt.Sprint(canonicalConds(conds))
}

// canonicalConds sorts conditions and drops repeats, without changing what
// their conjunction means.
func canonicalConds(conds []Cond) []Cond {
	cs := slices.Clone(conds)
	slices.SortFunc(cs, compareCond)
	return slices.Compact(cs)
}

func compareCond(a, b Cond) int {
	return cmp.Or(cmp.Compare(a.Arg, b.Arg), cmp.Compare(a.Op, b.Op),
		cmp.Compare(a.Value, b.Value), cmp.Compare(a.Mask, b.Mask))
}

// Union lists, sorted and once each, the syscalls any compartment may make:
// what the rules must allow for every library to work.
func (p *Policy) Union() []string {
	var names []string
	for _, c := range p.Compartments {
		names = append(names, c.Syscalls...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
