// Package compartment says which code of a process belongs to which
// compartment and what each compartment may call: the semantics the
// per-library filter implements. A Spec pairs a policy's compartments with
// a Layout, the addresses they have in one process; Verdict decides a call
// from its number, arguments and instruction pointer, and is the reference
// the compiled program is tested against.
package compartment

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Range is the code in [Start, End).
type Range struct {
	Start, End uint64
}

// Contains reports whether ip lies in r.
func (r Range) Contains(ip uint64) bool { return ip >= r.Start && ip < r.End }

// Layout is where compartments' code lies in one process.
type Layout struct {
	// Window is the base of the stub window: compartment i's stubs fill
	// [Window + i<<SlotShift, Window + (i+1)<<SlotShift). The window
	// lies inside one 4 GiB-aligned region.
	Window    uint64
	SlotShift uint8
	// Slots names the compartment of each slot of the window.
	Slots []string
	// Sites is the offset, in every slot, of the table of syscall
	// instructions the stubs make their calls at: call nr's lies
	// SiteStride*nr bytes into it. A call from a slot is its
	// compartment's only if it comes from its number's site (Pinned).
	Sites uint64
	// Text holds, per compartment, code of its objects that executes
	// syscall instructions itself (inline assembly, its own stubs).
	Text map[string][]Range
	// Runtime is the code of the system runtime (libc, the dynamic
	// loader, the vDSO): a call from there belongs to whoever called the
	// runtime, which only the supervisor can tell by unwinding.
	Runtime []Range
}

// The table of sites (audit/stubs.S): a syscall instruction for each
// call below SiteCount, SiteStride bytes apart. The kernel reports the
// instruction pointer after the instruction, siteLength bytes on.
const (
	SiteCount  = 1024
	SiteStride = 4
	siteLength = 2
)

// Pinned returns the offset in a slot from which call nr comes when a
// stub makes it: right after the syscall instruction of its site. Calls
// numbered SiteCount or more have no site.
func (l Layout) Pinned(nr uint32) (uint64, bool) {
	if nr >= SiteCount {
		return 0, false
	}
	return l.Sites + SiteStride*uint64(nr) + siteLength, true
}

// Spec is a policy's compartments laid out in a process.
type Spec struct {
	// Union is the whole-process policy for x86_64: the hard boundary.
	Union *policy.Table
	// Allowed holds each compartment's syscalls: in a policy with
	// phases, those it may make in either phase (its serving calls).
	Allowed map[string]map[uint32]bool
	// Starting holds, in a policy with phases, each compartment's calls
	// it may make only before its process serves: the kernel sends them
	// to the supervisor, which knows each process's phase.
	Starting map[string]map[uint32]bool
	// Reach holds, for the compartments whose reach the policy gives,
	// every call their code can make (policy.Compartment.Reach), their
	// allowed calls included.
	Reach  map[string]map[uint32]bool
	Layout Layout
	// BadArch applies to calls from any ABI but x86_64.
	BadArch policy.Action
	// covers memoizes Coverage and RuntimeCoverage below SiteCount, one
	// after the other for each number, each stored plus one (zero: not
	// yet known): the supervisor asks at every call it decides, and
	// each answer loops over the compartments. Both depend on Allowed,
	// Starting and Reach alone, which are never changed once NewSpec
	// returns, so a copy with another Union (package cell's for a
	// mode) rightly shares them.
	covers []atomic.Uint32
}

// Supervise is the action of calls the supervisor decides.
var Supervise = policy.Action{Kind: policy.UserNotify}

// NewSpec resolves p's compartments for x86_64 and checks that the layout
// names only compartments p has. Sealing is allowed whatever p says
// (withSealing).
func NewSpec(p *policy.Policy, l Layout) (*Spec, error) {
	r := p.Resolve([]syscalls.Arch{syscalls.X86_64})
	s := &Spec{Union: withSealing(r.Tables[0]), Allowed: map[string]map[uint32]bool{}, Starting: map[string]map[uint32]bool{},
		Reach: map[string]map[uint32]bool{}, Layout: l, BadArch: p.BadArch, covers: make([]atomic.Uint32, 2*SiteCount)}
	for _, c := range p.Compartments {
		all := numbers(c.Syscalls, nil)
		s.Allowed[c.Name] = numbers(p.ServingCalls(c), nil)
		if c.Reach != nil {
			s.Reach[c.Name] = numbers(c.Reach, all)
		}
	}
	s.allowMachinery()
	for _, c := range p.Compartments {
		s.Starting[c.Name] = starting(numbers(c.Syscalls, nil), s.Allowed[c.Name])
	}
	for _, name := range l.names() {
		if s.Allowed[name] == nil {
			return nil, fmt.Errorf("compartment: layout places %q, which the policy does not define", name)
		}
	}
	if l.Window%(1<<l.SlotShift) != 0 || (l.Window>>32) != (l.windowEnd()-1)>>32 {
		return nil, fmt.Errorf("compartment: window %#x with %d slots of %#x bytes is misaligned or crosses a 4 GiB boundary", l.Window, len(l.Slots), 1<<l.SlotShift)
	}
	if len(l.Slots) > 0 && l.Sites+SiteStride*SiteCount > 1<<l.SlotShift {
		return nil, fmt.Errorf("compartment: the table of sites at %#x does not fit a slot of %#x bytes", l.Sites, 1<<l.SlotShift)
	}
	if a, b, ok := l.overlap(); ok {
		return nil, fmt.Errorf("compartment: code ranges [%#x, %#x) and [%#x, %#x) overlap", a.Start, a.End, b.Start, b.End)
	}
	return s, nil
}

// numbers are the x86_64 numbers of names, added to a copy of also.
func numbers(names []string, also map[uint32]bool) map[uint32]bool {
	set := maps.Clone(also)
	if set == nil {
		set = map[uint32]bool{}
	}
	for _, name := range names {
		if nr, ok := syscalls.Lookup(syscalls.X86_64, name); ok {
			set[nr] = true
		}
	}
	return set
}

// starting is all but serving: the calls allowed only before serving.
func starting(all, serving map[uint32]bool) map[uint32]bool {
	maps.DeleteFunc(all, func(nr uint32, _ bool) bool { return serving[nr] })
	return all
}

// May says whether compartment name may make call nr in some phase.
func (s *Spec) May(name string, nr uint32) bool {
	return s.Allowed[name][nr] || s.Starting[name][nr]
}

// machinery are calls no compartment can be said to own. The kernel's
// signal delivery makes a thread issue a handler's return (rt_sigreturn,
// from the restorer in libc) and the resumption of an interrupted call
// (restart_syscall), for whatever code the signal interrupted. futex is
// how libc's locks, condition variables and semaphores wait when they
// are contended: whether a library's lock ever is depends on timing, so
// a recorded run cannot tell which compartments need it, and a denial
// would break a lock rather than bound a library. exit and exit_group
// end the caller, which can never widen what it may do; whichever code
// calls exit, glibc's _exit falls through to a fault if they fail.
var machinery = []string{"rt_sigreturn", "restart_syscall", "futex", "exit", "exit_group"}

// sealing is mseal: it takes away what any code may do to a mapping
// (mprotect, mmap over it, munmap), and the audit library seals with it
// the code of every object the loader maps, under the filter for a
// library loaded by dlopen; so every compartment may make it, whatever
// the policy says. Code that seals memory only takes rights away from
// the process, as exit does.
const sealing = "mseal"

// withSealing returns t with sealing allowed.
func withSealing(t *policy.Table) *policy.Table {
	nr, ok := syscalls.Lookup(syscalls.X86_64, sealing)
	if !ok {
		return t
	}
	out := *t
	out.Syscalls = maps.Clone(t.Syscalls)
	if out.Syscalls == nil {
		out.Syscalls = map[uint32][]policy.Branch{}
	}
	out.Syscalls[nr] = []policy.Branch{{Action: policy.ActAllow}}
	return &out
}

// allowMachinery lets every compartment make the machinery calls the
// union allows, and seal memory.
func (s *Spec) allowMachinery() {
	for _, name := range slices.Concat(machinery, []string{sealing}) {
		nr, ok := syscalls.Lookup(syscalls.X86_64, name)
		if !ok || s.Union.Verdict(nr, [policy.MaxArgs]uint64{}) != policy.ActAllow {
			continue
		}
		for _, set := range s.Allowed {
			set[nr] = true
		}
	}
}

// overlap finds two ranges of the layout that share an address: each
// address must have one owner.
func (l Layout) overlap() (Range, Range, bool) {
	all := []Range{{Start: l.Window, End: l.windowEnd()}}
	for _, rs := range l.Text {
		all = append(all, rs...)
	}
	all = append(all, l.Runtime...)
	sort.Slice(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	for i := 1; i < len(all); i++ {
		if all[i].Start < all[i-1].End {
			return all[i-1], all[i], true
		}
	}
	return Range{}, Range{}, false
}

func (l Layout) windowEnd() uint64 { return l.Window + uint64(len(l.Slots))<<l.SlotShift }

func (l Layout) inWindow(ip uint64) bool { return ip >= l.Window && ip < l.windowEnd() }

// InRuntime says whether ip lies in the system runtime's code.
func (l Layout) InRuntime(ip uint64) bool {
	for _, r := range l.Runtime {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// runtimeVerdict decides call nr made from the runtime's code, which
// the union allows and some compartments may make (RuntimeCoverage).
func (s *Spec) runtimeVerdict(nr uint32) policy.Action {
	switch s.RuntimeCoverage(nr) {
	case All:
		return policy.ActAllow
	case None:
		return s.Union.Default
	}
	return Supervise
}

// ownVerdict decides call nr made from compartment name's own code (or,
// in the window, from its slot, where only the call's own site counts):
// allowed in every phase, allowed only while starting (the supervisor
// knows the phase), or denied.
func (s *Spec) ownVerdict(name string, nr uint32, ip uint64) policy.Action {
	if !s.May(name, nr) {
		return s.Union.Default
	}
	if s.Layout.inWindow(ip) {
		if site, ok := s.Layout.Pinned(nr); !ok || (ip-s.Layout.Window)&(1<<s.Layout.SlotShift-1) != site {
			return s.Union.Default
		}
	}
	if !s.Allowed[name][nr] {
		return Supervise
	}
	return policy.ActAllow
}

// names lists the compartments the layout places, sorted.
func (l Layout) names() []string {
	seen := map[string]bool{}
	for _, n := range l.Slots {
		seen[n] = true
	}
	for n := range l.Text {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Owner is the compartment whose code ip lies in; "" with supervise true
// when only the supervisor can tell (runtime code, or code the layout does
// not know, such as a library loaded later or JIT code).
func (l Layout) Owner(ip uint64) (name string, supervise bool) {
	if l.inWindow(ip) {
		return l.Slots[(ip-l.Window)>>l.SlotShift], false
	}
	// Ranges do not overlap (NewSpec), so the order of the search does
	// not matter.
	for n, rs := range l.Text {
		for _, r := range rs {
			if r.Contains(ip) {
				return n, false
			}
		}
	}
	return "", true
}

// Verdict decides a call. The union decides first: what it denies stays
// denied. A call every compartment may make is allowed wherever it comes
// from and one no compartment may make is denied, so neither needs the
// instruction pointer. Otherwise the compartment that owns ip decides,
// from a slot of the window only at the call's own site, and calls whose
// owner only the supervisor can tell go to it.
func (s *Spec) Verdict(arch, nr uint32, ip uint64, args [policy.MaxArgs]uint64) policy.Action {
	if arch != syscalls.AuditArchX86_64 || nr >= syscalls.X32Bit {
		return s.BadArch
	}
	union := s.Union.Verdict(nr, args)
	if union != policy.ActAllow {
		return union
	}
	switch s.Coverage(nr) {
	case All:
		return policy.ActAllow
	case None:
		return s.Union.Default
	}
	name, supervise := s.Layout.Owner(ip)
	switch {
	case supervise && s.Layout.InRuntime(ip):
		return s.runtimeVerdict(nr)
	case supervise:
		return Supervise
	}
	return s.ownVerdict(name, nr, ip)
}

// Coverage is how many compartments allow a syscall.
type Coverage uint8

// The coverages that decide how a syscall is filtered: by number alone
// (None, All) or by instruction pointer (Some).
const (
	None Coverage = iota
	Some
	All
)

// Coverage of nr: All where every compartment may make it in every
// phase, None where none may in any phase. With no compartments at all,
// every syscall the union allows counts as allowed by all.
func (s *Spec) Coverage(nr uint32) Coverage {
	return s.memo(2*uint64(nr), func() Coverage {
		return s.coverage(nr, func(string) bool { return true })
	})
}

// memo returns the coverage memoized at i, computing it first where it
// is not.
func (s *Spec) memo(i uint64, compute func() Coverage) Coverage {
	if i >= uint64(len(s.covers)) {
		return compute()
	}
	if c := s.covers[i].Load(); c != 0 {
		return Coverage(c - 1)
	}
	c := compute()
	s.covers[i].Store(uint32(c) + 1)
	return c
}

// RuntimeCoverage of nr is its coverage among the compartments that can
// make the runtime's code (libc's, the loader's) issue it: those whose
// reach holds it, or whose reach the policy does not give. A call from
// the runtime's code belongs to whoever called the runtime, so only they
// count: where they all may make it, or none may, the instruction pointer
// in the runtime decides it, in the kernel, with no unwind.
func (s *Spec) RuntimeCoverage(nr uint32) Coverage {
	return s.memo(2*uint64(nr)+1, func() Coverage {
		return s.coverage(nr, func(name string) bool {
			reach, known := s.Reach[name]
			return !known || reach[nr]
		})
	})
}

// coverage of nr among the compartments counted says.
func (s *Spec) coverage(nr uint32, counted func(string) bool) Coverage {
	all, some := true, false
	for name, set := range s.Allowed {
		if !counted(name) {
			continue
		}
		all = all && set[nr]
		some = some || s.May(name, nr)
	}
	switch {
	case all:
		return All
	case !some:
		return None
	}
	return Some
}
