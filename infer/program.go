package infer

import (
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/syscalls"
)

// Program is objects loaded together, linked and solved: what each can
// make the kernel do.
type Program struct {
	s *solver
	// pools are what a call of any function of each pool, with
	// arguments the analysis does not know, can do.
	pools [numPools]summary
	// members are each pool's functions.
	members [numPools]targets
	// Stats describe the analysis.
	Stats Stats
	// cached counts the objects whose analysis came from a cache.
	cached int
}

// Stats count what the analysis saw.
type Stats struct {
	Objects, Functions int
	// Pools count the functions of each pool: the runtime's functions an
	// unknown indirect call of the runtime may reach, those other
	// objects take, those glibc keeps mangled, those the loader looks up
	// by name.
	Pools [numPools]int
}

// Kind tells Link which objects form the system runtime, which is the
// vDSO, which one is the loader, which the program the kernel starts
// (a library may have an entry point too, for running it as a command,
// as libcap has), and which are loaded with dlopen (whose exports dlsym
// may look up by any name).
type Kind struct {
	Runtime  func(*Object) bool
	VDSO     func(*Object) bool
	Loader   func(*Object) bool
	Program  func(*Object) bool
	Dlopened func(*Object) bool
}

// Link links and solves objects.
func Link(objs []*Object, kind Kind) *Program {
	l := newLinker(objs, kind)
	p := &Program{s: newSolver(l)}
	for _, o := range objs {
		p.Stats.Functions += len(o.Functions)
	}
	p.Stats.Objects = len(objs)
	p.s.solve()
	p.members = [numPools]targets{
		poolRuntime: {nodes: p.takenByRuntime()},
		poolOther:   {nodes: p.takenByOthers()},
		poolMangled: p.mangled(),
		poolLoader:  p.loaderNamed(),
	}
	for i, t := range p.members {
		p.Stats.Pools[i] = len(t.nodes)
		p.pools[i] = p.join(t)
	}
	p.closePools()
	return p
}

// VDSO names the functions of the vDSO whose presence decided an IFUNC
// resolver's pick (linker.vdsoDecides), sorted.
func (p *Program) VDSO() []string { return sortedKeys(p.s.assumed) }

// join is what a call of any of t's functions of the runtime, with
// arguments the analysis does not know, can do for its caller.
func (p *Program) join(t targets) summary {
	out := summary{pools: t.pools}
	if t.unknown {
		out.pools |= 1 << poolRuntime
	}
	for _, n := range t.nodes {
		sums := []summary{p.s.ups[n].flat()}
		if p.s.runtime[p.s.nodes[n].obj] {
			sums = append(sums, p.s.sums[n].flat())
		}
		for _, sum := range sums {
			out.nrs.union(&sum.nrs)
			out.all = out.all || sum.all || sum.params != 0 || sum.nfields != 0
			out.pools |= sum.pools
			if sum.calls != 0 {
				out.pools |= 1 << poolRuntime
			}
		}
	}
	return out
}

// closePools adds to each pool what the pools its functions' calls
// reach can do, until nothing changes.
func (p *Program) closePools() {
	for changed := true; changed; {
		changed = false
		for i := range p.pools {
			for j := range p.pools {
				if i != j && p.pools[i].pools&(1<<j) != 0 {
					other := p.pools[j]
					changed = p.pools[i].merge(&other) || changed
				}
			}
		}
	}
}

// final completes a summary with what its guarded calls and the pools
// its indirect calls reach can do: what it does with arguments the
// analysis does not know.
func (p *Program) final(sum summary) summary {
	sum = sum.flat()
	out := sum
	for i := range p.pools {
		if sum.pools&(1<<i) != 0 {
			pool := p.pools[i]
			out.merge(&pool)
		}
	}
	return out
}

// takenByRuntime are the runtime's functions whose addresses are taken
// in the runtime (by its code, its relocated data or the GOT slots its
// code reads) or that it looks up by name, the vDSO's, those the loader
// looks up by name, and those other objects take: what an indirect call
// in the runtime may reach when nothing more is known.
func (p *Program) takenByRuntime() []int {
	l := p.s.linker
	set := map[int]bool{}
	for i := range l.objs {
		if l.runtime[i] {
			p.taken(i, set)
			p.looked(i, set)
		}
	}
	addTargets(set, p.loaderNamed())
	for n := range p.takenByOthersSet() {
		set[n] = true
	}
	return sortedSet(set)
}

// loaderNamed are the functions the loader may look up by name (its
// strings name them): those it stores in its data for libc, the vDSO's
// above all, are where it stores them.
func (p *Program) loaderNamed() targets {
	l := p.s.linker
	set := map[int]bool{}
	if l.loader >= 0 {
		p.named(l.loader, set)
	}
	return targets{nodes: sortedSet(set)}
}

// takenByOthers are the runtime's functions whose addresses the other
// objects take, or look up with dlsym.
func (p *Program) takenByOthers() []int { return sortedSet(p.takenByOthersSet()) }

func (p *Program) takenByOthersSet() map[int]bool {
	l := p.s.linker
	set := map[int]bool{}
	for i := range l.objs {
		if l.runtime[i] {
			continue
		}
		mine := map[int]bool{}
		p.taken(i, mine)
		for n := range mine {
			if l.runtime[l.nodes[n].obj] {
				set[n] = true
			}
		}
		p.looked(i, set)
	}
	return set
}

// taken adds to set the functions whose addresses object i takes.
func (p *Program) taken(i int, set map[int]bool) {
	for n := range p.s.taken(i) {
		set[n] = true
	}
}

// looked adds to set the runtime's exports object i looks up by name
// with dlsym, with names that are constants in its code.
func (p *Program) looked(i int, set map[int]bool) {
	l := p.s.linker
	for _, name := range l.objs[i].Looked {
		addTargets(set, l.byName(name))
	}
}

// named adds to set the runtime's exports whose names object i's strings
// give: what its lookups by name may find.
func (p *Program) named(i int, set map[int]bool) {
	l := p.s.linker
	for _, name := range l.objs[i].Strings {
		for _, n := range l.exports[name] {
			set[n] = true
		}
	}
}

func addTargets(set map[int]bool, t targets) {
	for _, n := range t.nodes {
		set[n] = true
	}
}

func sortedSet(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	return sortedInts(out)
}

// isCode says whether addr is the entry of one of o's functions.
func (o *Object) isCode(addr uint64) bool {
	_, ok := o.Functions[addr]
	return ok
}

// Calls is a set of system calls: x86_64 names, or every call.
type Calls struct {
	nrs nrSet
	All bool
}

// Names lists the calls by name, sorted; every x86_64 call if All.
func (c Calls) Names() []string {
	if c.All {
		return syscalls.Names(syscalls.X86_64)
	}
	var out []string
	c.nrs.each(func(nr uint64) {
		if name, ok := syscalls.Name(syscalls.X86_64, uint32(nr)); ok {
			out = append(out, name)
		}
	})
	return sortStrings(out)
}

func callsOf(sum summary) Calls { return Calls{nrs: sum.nrs, All: sum.all} }

// Object returns the calls object i's code can make, itself or through
// the runtime, as record attributes them; the function at an
// executable's entry point (crt1's _start) is the runtime's.
func (p *Program) Object(i int) Calls {
	l := p.s.linker
	o := l.objs[i]
	entries := p.entries(i)
	var out summary
	for addr := range o.Functions {
		if o.Exec && addr == o.Entry {
			continue
		}
		n := l.index[i][addr]
		if !l.live[n] {
			continue
		}
		sum := p.s.sums[n]
		if entries[n] {
			// Called from elsewhere, with arguments the analysis does not
			// know.
			sum.all = sum.all || sum.params != 0
			if sum.calls != 0 {
				sum.pools |= 1 << poolOther
			}
		}
		final := p.final(sum)
		out.merge(&final)
	}
	if !o.BindNow && hasPLT(o) {
		// The loader's lazy-binding trampoline runs on the object's
		// behalf at the first call of each import.
		lazy := p.final(p.join(l.trampolines()))
		out.merge(&lazy)
	}
	return callsOf(out)
}

// entries are the nodes of object i that code elsewhere calls with
// arguments the analysis does not know: its exports, its entry point,
// and its constructors and destructors. A function whose address it
// takes is assumed to be called by its own indirect calls only (and
// those of the runtime, with the object's arguments), which the analysis
// follows.
func (p *Program) entries(i int) map[int]bool {
	l := p.s.linker
	o := l.objs[i]
	set := map[int]bool{}
	for _, es := range o.Exports {
		for _, e := range es {
			if n, ok := l.index[i][e.Addr]; ok {
				set[n] = true
			}
		}
	}
	if n, ok := l.index[i][o.Entry]; ok {
		set[n] = true
	}
	for _, sec := range o.Sections {
		if sec.Name == ".init_array" || sec.Name == ".fini_array" || sec.Name == ".preinit_array" {
			addTargets(set, l.wordsIn(i, sec.Range))
		}
	}
	return set
}

// hasPLT says whether o calls through JUMP_SLOT relocations.
func hasPLT(o *Object) bool {
	for _, w := range o.Words {
		if w.Kind == image.Symbol && w.Call {
			return true
		}
	}
	return false
}

// Runtime returns what the runtime does with no caller outside it:
// starting the program and ending it (libc's __libc_start_main), and
// the functions it starts threads and children with, which are among
// the ones whose addresses it takes; and what the other objects' code
// it starts with no caller below (the entry point, constructors and
// destructors) makes its own by tail calls. A function a thread starts
// with that ends in a tail call of libc is not followed there.
func (p *Program) Runtime() Calls {
	out := p.pools[poolRuntime]
	start := p.join(p.s.byName("__libc_start_main"))
	out.merge(&start)
	for i, o := range p.s.objs {
		if p.s.runtime[i] {
			continue
		}
		var started targets
		if i == p.s.program {
			started.add(p.s.at(i, o.Entry))
		}
		for _, addr := range o.InitFini {
			started.add(p.s.at(i, addr))
		}
		for _, sec := range o.Sections {
			if sec.Name == ".init_array" || sec.Name == ".fini_array" || sec.Name == ".preinit_array" {
				started.add(p.s.wordsIn(i, sec.Range))
			}
		}
		for _, n := range started.nodes {
			up := p.s.ups[n].flat()
			out.nrs.union(&up.nrs)
			out.all = out.all || up.all
			out.pools |= up.pools
		}
	}
	return callsOf(p.final(out))
}

// StartUp returns what the dynamic loader can do from its entry point:
// the calls starting the program, before any compartment's filter.
func (p *Program) StartUp() Calls {
	l := p.s.linker
	if l.loader < 0 {
		return Calls{}
	}
	return callsOf(p.final(p.join(l.at(l.loader, l.objs[l.loader].Entry))))
}

// Entry is one exported function of an object and what calling it can
// do: the map of a library's functions to the calls they can make.
type Entry struct {
	Name  string
	Calls Calls
	// Params are the arguments whose value is the number of a call it
	// makes (bit i: argument i), as for syscall(2).
	Params uint8
	// Indirect says it makes an indirect call whose target the analysis
	// does not know, and so can do what any function whose address is
	// taken can (included in Calls).
	Indirect bool
}

// Map lists the exported functions of object i, by name, with what a
// call of each can do in the compartment of its caller.
func (p *Program) Map(i int) []Entry {
	l := p.s.linker
	o := l.objs[i]
	var out []Entry
	for _, name := range sortedKeys(o.Exports) {
		var sum summary
		for _, e := range o.Exports[name] {
			for _, n := range l.export(i, e).nodes {
				s := p.s.sums[n]
				sum.merge(&s)
			}
		}
		sum = sum.flat()
		final := p.final(sum)
		out = append(out, Entry{Name: name, Calls: callsOf(final), Params: sum.params,
			Indirect: sum.pools&(1<<poolRuntime|1<<poolOther) != 0})
	}
	return out
}

// Ending returns the calls of the paths that end the program in object
// i: what its live calls of the runtime's functions that never return
// (exit, abort, __assert_fail, err) can make.
func (p *Program) Ending(i int) Calls {
	l := p.s.linker
	var out summary
	for addr := range l.objs[i].Functions {
		n := l.index[i][addr]
		if !l.live[n] {
			continue
		}
		fn := l.nodes[n].fn
		for k := range fn.Calls {
			for _, t := range l.call(i, &fn.Calls[k]).nodes {
				if l.runtime[l.nodes[t].obj] && !l.nodes[t].fn.Returns {
					sum := p.final(p.s.sums[t])
					out.merge(&sum)
				}
			}
		}
	}
	return callsOf(out)
}
