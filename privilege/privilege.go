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
//
// A syscell policy with phases (serving-from) narrows each compartment
// once its process serves, to its serving set S_C^serving ⊆ S_C (all of
// S_C where it has none). Every figure then has a serving-phase twin,
// the same equation over the serving sets: P_C^serving, and P_A^serving,
// that of the most privileged compartment while serving. S_C is the
// initialisation phase's bound: a compartment may make all of its calls
// before the transition. Two reductions compare P_A^serving with a
// whole-process filter:
//
//   - the serving reduction, (P_seccomp − P_A^serving) / P_seccomp × 100,
//     against the one filter of the union that a process without phases
//     keeps for its whole run, the anchor of equation 3 unchanged;
//   - the phased reduction, (P_seccomp^serving − P_A^serving) /
//     P_seccomp^serving × 100, against a whole-process filter narrowed at
//     the same transition, whose serving set is the union of the
//     compartments' serving sets, as temporal specialization builds it.
//     The calls made outside compartments (a policy's rules) are not in
//     it: they are the loader's start-up and the union's hard boundary,
//     which no serving set counts either.
//
// Without phases both twins equal their one-phase figures.
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
	// Serving is the set S_C^serving of the calls the compartment may
	// still make once its process serves: Syscalls where the file has no
	// phases or does not narrow the compartment.
	Serving []string
}

// newCompartment makes the syscalls sets, as S_C is: a call listed twice
// is scored once. A nil Serving keeps all the syscalls; an empty one keeps
// none.
func newCompartment(c Compartment) Compartment {
	c.Syscalls = set(c.Syscalls)
	if c.Serving == nil {
		c.Serving = c.Syscalls
	} else {
		c.Serving = set(c.Serving)
	}
	return c
}

// set is names sorted, each once, in a new slice (never nil).
func set(names []string) []string {
	s := append([]string{}, names...)
	slices.Sort(s)
	return slices.Compact(s)
}

// Privilege is P_C, equation 1: the sum of the danger scores of the
// compartment's syscalls.
func (c Compartment) Privilege(r *ranking.Ranking) int { return sum(c.Syscalls, r) }

// ServingPrivilege is P_C^serving: equation 1 over the serving set.
func (c Compartment) ServingPrivilege(r *ranking.Ranking) int { return sum(c.Serving, r) }

func sum(names []string, r *ranking.Ranking) int {
	p := 0
	for _, name := range names {
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
	// syso's "[start-up]" counts. They count in the union only, and
	// not in its serving set.
	Outside []string
	// ServingFrom names the calls that start the serving phase, in a
	// syscell policy with phases; empty in a file without them.
	ServingFrom []string
}

// Phased says whether the file narrows compartments once a process
// serves.
func (a *Allowlists) Phased() bool { return len(a.ServingFrom) > 0 }

// Union is the compartment of the same process under a single seccomp
// filter: every syscall some compartment may make, as syso builds it, and
// those the process may make outside them, which one filter for the whole
// process must allow too. P_seccomp ≥ P_A, as the metric assumes. With
// phases, its serving set is the union of the compartments' serving sets:
// what a whole-process filter narrowed at the transition must allow.
func (a *Allowlists) Union() Compartment {
	all := slices.Clone(a.Outside)
	var serving []string
	for _, c := range a.Compartments {
		all = append(all, c.Syscalls...)
		serving = append(serving, c.Serving...)
	}
	u := Compartment{Name: UnionName, Syscalls: all}
	if a.Phased() {
		u.Serving = append([]string{}, serving...) // none at all is an empty set, not nil's "all"
	}
	return newCompartment(u)
}

// UnionName names the union compartment.
const UnionName = "seccomp (union)"

// Scored is a compartment with its privilege in each phase.
type Scored struct {
	Compartment
	Privilege        int
	ServingPrivilege int
}

// Score is the metric of a file under one ranking.
type Score struct {
	// Compartments in file order.
	Compartments []Scored
	// Union is the whole process under one seccomp filter; its
	// privilege is P_seccomp.
	Union Scored
	// Most indexes the compartment whose privilege is P_A, the first of
	// equals; MostServing the one whose serving privilege is
	// P_A^serving.
	Most, MostServing int
	// Phased says whether the file has phases.
	Phased bool
}

// Score computes the metric of a under r.
func (a *Allowlists) Score(r *ranking.Ranking) Score {
	s := Score{Union: score(a.Union(), r), Phased: a.Phased()}
	for i, c := range a.Compartments {
		s.Compartments = append(s.Compartments, score(c, r))
		if s.Compartments[i].Privilege > s.Compartments[s.Most].Privilege {
			s.Most = i
		}
		if s.Compartments[i].ServingPrivilege > s.Compartments[s.MostServing].ServingPrivilege {
			s.MostServing = i
		}
	}
	return s
}

func score(c Compartment, r *ranking.Ranking) Scored {
	return Scored{Compartment: c, Privilege: c.Privilege(r), ServingPrivilege: c.ServingPrivilege(r)}
}

// App is P_A, equation 2: the privilege of the most privileged
// compartment.
func (s Score) App() int { return s.Compartments[s.Most].Privilege }

// Seccomp is P_seccomp: the privilege of the union.
func (s Score) Seccomp() int { return s.Union.Privilege }

// Reduction is the privilege reduction in percent, equation 3.
func (s Score) Reduction() float64 { return Reduction(s.Seccomp(), s.App()) }

// AppServing is P_A^serving: the serving privilege of the compartment
// most privileged while serving.
func (s Score) AppServing() int { return s.Compartments[s.MostServing].ServingPrivilege }

// SeccompServing is P_seccomp^serving: the privilege of the union's
// serving set, what a whole-process filter narrowed at the transition
// allows.
func (s Score) SeccompServing() int { return s.Union.ServingPrivilege }

// ServingReduction is (P_seccomp − P_A^serving) / P_seccomp × 100: the
// serving phase against one whole-process filter for the whole run.
func (s Score) ServingReduction() float64 { return Reduction(s.Seccomp(), s.AppServing()) }

// PhasedReduction is (P_seccomp^serving − P_A^serving) /
// P_seccomp^serving × 100: the serving phase against a whole-process
// filter narrowed at the same transition.
func (s Score) PhasedReduction() float64 { return Reduction(s.SeccompServing(), s.AppServing()) }

// Reduction is equation 3 with p in place of P_A: how much less privilege,
// in percent of seccomp's, p is. With nothing allowed at all (seccomp 0)
// there is nothing to reduce, and the reduction is 0.
func Reduction(seccomp, p int) float64 {
	if seccomp == 0 {
		return 0
	}
	return float64(seccomp-p) / float64(seccomp) * 100
}
