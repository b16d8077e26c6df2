// Package privilege is addrfilter's privilege metric (the evaluation of
// addrfilter, equations 1 to 3), and the readers of the files it is
// computed from: syscell policies, OCI profiles, addrfilter's TOML
// whitelists and syso's JSON counts.
//
// A compartment's privilege P_C is the sum of the danger scores of the
// distinct syscalls it may make (equation 1). An application's privilege
// P_A is that of its most privileged compartment (equation 2): an attacker
// is assumed to hold the worst one. The same application under one seccomp
// filter is one compartment holding the union of all of them, P_seccomp,
// and the reduction is (P_seccomp − P_A) / P_seccomp × 100 (equation 3).
package privilege

import (
	"slices"

	"github.com/syscell/syscell/ranking"
)

// Compartment is one allowlist: a library's, an executable's, or a whole
// process's.
type Compartment struct {
	// Name is what the file calls it: a path, a file name, or syscell's
	// compartment name.
	Name string
	// Path and BuildID identify the object when the file says so; see
	// Compare.
	Path    string
	BuildID string
	// Syscalls is the set S_C: names, sorted, each once.
	Syscalls []string
}

// newCompartment makes the syscalls a set, as S_C is: a call listed twice
// is scored once.
func newCompartment(c Compartment) Compartment {
	c.Syscalls = slices.Clone(c.Syscalls)
	slices.Sort(c.Syscalls)
	c.Syscalls = slices.Compact(c.Syscalls)
	return c
}

// Privilege is P_C, equation 1: the sum of the danger scores of the
// compartment's syscalls.
func (c Compartment) Privilege(r *ranking.Ranking) int {
	p := 0
	for _, name := range c.Syscalls {
		p += r.ScoreName(name)
	}
	return p
}

// Allowlists is what the metric reads from a file: its compartments,
// whatever the format.
type Allowlists struct {
	// Source is the file.
	Source string
	Format Format
	// Compartments in file order; there is at least one.
	Compartments []Compartment
	// WholeProcess says that the file has no compartments, so that its
	// one compartment is the whole process, what its rules let run.
	WholeProcess bool
	// Outside are syscalls the process may make outside every
	// compartment: a syscell policy's rules (the dynamic loader's
	// start-up calls, which come before any compartment's filter), or
	// syso's "[start-up]" counts. They count in the union only.
	Outside []string
}

// Union is the compartment of the same process under a single seccomp
// filter: every syscall some compartment may make, as syso builds it, and
// those the process may make outside them, which one filter for the whole
// process must allow too. P_seccomp ≥ P_A, as the metric assumes.
func (a *Allowlists) Union() Compartment {
	all := slices.Clone(a.Outside)
	for _, c := range a.Compartments {
		all = append(all, c.Syscalls...)
	}
	return newCompartment(Compartment{Name: UnionName, Syscalls: all})
}

// UnionName names the union compartment.
const UnionName = "seccomp (union)"

// Scored is a compartment with its privilege.
type Scored struct {
	Compartment
	Privilege int
}

// Score is the metric of a file under one ranking.
type Score struct {
	// Compartments in file order.
	Compartments []Scored
	// Union is the whole process under one seccomp filter; its
	// privilege is P_seccomp.
	Union Scored
	// Most indexes the compartment whose privilege is P_A, the first of
	// equals.
	Most int
}

// Score computes the metric of a under r.
func (a *Allowlists) Score(r *ranking.Ranking) Score {
	s := Score{Union: score(a.Union(), r)}
	for i, c := range a.Compartments {
		s.Compartments = append(s.Compartments, score(c, r))
		if s.Compartments[i].Privilege > s.Compartments[s.Most].Privilege {
			s.Most = i
		}
	}
	return s
}

func score(c Compartment, r *ranking.Ranking) Scored {
	return Scored{Compartment: c, Privilege: c.Privilege(r)}
}

// App is P_A, equation 2: the privilege of the most privileged
// compartment.
func (s Score) App() int { return s.Compartments[s.Most].Privilege }

// Seccomp is P_seccomp: the privilege of the union.
func (s Score) Seccomp() int { return s.Union.Privilege }

// Reduction is the privilege reduction in percent, equation 3.
func (s Score) Reduction() float64 { return Reduction(s.Seccomp(), s.App()) }

// Reduction is equation 3 with p in place of P_A: how much less privilege,
// in percent of seccomp's, p is. With nothing allowed at all (seccomp 0)
// there is nothing to reduce, and the reduction is 0.
func Reduction(seccomp, p int) float64 {
	if seccomp == 0 {
		return 0
	}
	return float64(seccomp-p) / float64(seccomp) * 100
}
