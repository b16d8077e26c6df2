package infer

import (
	"slices"

	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/x86"
)

// node is one function of one object of a Program, or, with no
// function, the pseudo-function that stands for every function of a
// non-runtime object whose address the object takes (members): what
// an indirect call of the object that the analysis cannot resolve may
// call, with the call's own arguments.
type node struct {
	obj     int
	fn      *x86.Function
	members []int
}

// targets are the functions a call may reach: nodes, pools of them,
// and unknown when the analysis cannot tell more (the runtime's pool for
// a call of the runtime, poolOther for another object's).
type targets struct {
	nodes   []int
	pools   uint8
	unknown bool
}

func (t *targets) add(o targets) {
	t.nodes = append(t.nodes, o.nodes...)
	t.pools |= o.pools
	t.unknown = t.unknown || o.unknown
}

// linker resolves calls, addresses and symbols to nodes.
type linker struct {
	objs    []*Object
	runtime []bool
	nodes   []node
	// index maps each object's function entries to nodes.
	index []map[uint64]int
	// own is each non-runtime object's pseudo-node of the functions
	// whose addresses it takes, -1 for the runtime's.
	own []int
	// live says which nodes can run in the process (findLive), pieces
	// which pieces of data it reaches.
	live   []bool
	pieces *liveData
	// dlopened says which objects only dlopen loads.
	dlopened []bool
	// exports maps a name to the runtime's functions of that name;
	// defined to every object's.
	exports, defined map[string][]int
	// vdso are the vDSO's functions: what libc's pointers to it (and an
	// IFUNC resolver that reads one) may give.
	vdso []int
	// vdsoObj is the vDSO's object, -1 if none; assumed are the names
	// its exports decided an IFUNC resolver's pick by (vdsoDecides):
	// what the inference assumes of the machine.
	vdsoObj int
	assumed map[string]bool
	// loader is the dynamic loader's object, program the one the kernel
	// starts, -1 if none.
	loader, program int
	// data maps an exported data object's name to its object and
	// address.
	data  map[string]dataSym
	slots map[slotKey]targets
	// stores are the values code stores to words, by word (storesAt).
	stores map[loc][]stored
}

type dataSym struct {
	obj  int
	addr uint64
}

type slotKey struct {
	obj  int
	addr uint64
}

func newLinker(objs []*Object, kind Kind) *linker {
	l := &linker{objs: objs, runtime: make([]bool, len(objs)), index: make([]map[uint64]int, len(objs)),
		exports: map[string][]int{}, defined: map[string][]int{}, slots: map[slotKey]targets{}, data: map[string]dataSym{}, loader: -1, program: -1,
		vdsoObj: -1, assumed: map[string]bool{}}
	l.dlopened = make([]bool, len(objs))
	for i, o := range objs {
		l.runtime[i] = kind.Runtime(o)
		l.dlopened[i] = kind.Dlopened != nil && kind.Dlopened(o)
		if kind.Loader(o) {
			l.loader = i
		}
		if kind.Program != nil && kind.Program(o) {
			l.program = i
		}
		if kind.VDSO(o) {
			l.vdsoObj = i
		}
		for _, name := range sortedKeys(o.Data) {
			if _, ok := l.data[name]; !ok {
				l.data[name] = dataSym{i, o.Data[name]}
			}
		}
		l.index[i] = map[uint64]int{}
		for _, addr := range sortedKeys(o.Functions) {
			l.index[i][addr] = len(l.nodes)
			l.nodes = append(l.nodes, node{obj: i, fn: o.Functions[addr]})
		}
	}
	for i, o := range objs {
		for _, name := range sortedKeys(o.Exports) {
			for _, e := range o.Exports[name] {
				t := l.export(i, e)
				l.defined[name] = append(l.defined[name], t.nodes...)
				if !l.runtime[i] {
					continue
				}
				l.exports[name] = append(l.exports[name], t.nodes...)
				if kind.VDSO(o) {
					l.vdso = append(l.vdso, t.nodes...)
				}
			}
		}
	}
	for _, m := range []map[string][]int{l.exports, l.defined} {
		for name, ns := range m {
			slices.Sort(ns)
			m[name] = slices.Compact(ns)
		}
	}
	l.findLive()
	l.own = make([]int, len(objs))
	for i := range objs {
		l.own[i] = -1
		if l.runtime[i] {
			continue
		}
		var members []int
		for n := range l.taken(i) {
			if l.nodes[n].obj == i {
				members = append(members, n)
			}
		}
		l.own[i] = len(l.nodes)
		l.nodes = append(l.nodes, node{obj: i, members: sortedInts(members)})
		l.live = append(l.live, true)
	}
	return l
}

// taken are the functions whose addresses object i takes: with its live
// code (LEA, immediates of position-dependent code), its live relocated
// data, and the GOT slots its live code reads rather than calls through
// (or that no code reads the ways the analysis sees).
func (l *linker) taken(i int) map[int]bool {
	set := map[int]bool{}
	o := l.objs[i]
	loaded := map[uint64]bool{}
	for addr, fn := range o.Functions {
		if !l.live[l.index[i][addr]] {
			// Dead code takes no address that counts.
			continue
		}
		for _, r := range fn.Refs {
			addTargets(set, l.at(i, r))
		}
		for _, r := range fn.Imms {
			addTargets(set, l.at(i, r))
		}
		for _, a := range append(append([]uint64(nil), fn.Loads...), fn.Reads...) {
			loaded[a] = true
		}
	}
	for addr, w := range o.Words {
		if !(l.pieces.wordLive(i, addr) || loaded[addr]) || (l.pieces.read[i][addr] && !loaded[addr]) {
			// Dead data, or a GOT slot live code does not read: it
			// calls through it, or only dead code reads it.
			continue
		}
		switch {
		case w.Kind == image.Local && o.isCode(w.Addr):
			addTargets(set, l.at(i, w.Addr))
		case w.Kind == image.Symbol && !w.Call:
			addTargets(set, l.symbol(i, w.Name))
		}
	}
	return set
}

func sortedKeys[K ~string | ~uint64, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// export is what calling an export of object o reaches: the function, or
// for an IFUNC what its resolver may return.
func (l *linker) export(o int, e image.Export) targets {
	if e.IFunc {
		return l.resolved(o, e.Addr)
	}
	return l.at(o, e.Addr)
}

// at is the function of object o entered at addr, through any thunk.
func (l *linker) at(o int, addr uint64) targets {
	n, ok := l.index[o][addr]
	if !ok {
		return targets{}
	}
	if slot, ok := thunk(l.nodes[n].fn); ok {
		return l.slot(o, slot)
	}
	return targets{nodes: []int{n}}
}

// thunk says whether a function only jumps through a slot, as a PLT
// entry does, and which.
func thunk(fn *x86.Function) (uint64, bool) {
	if len(fn.Calls) == 0 || len(fn.Syscalls) > 0 {
		return 0, false
	}
	c := fn.Calls[0]
	// An endbr64 may come first.
	if !c.Tail || c.Ptr.Kind != x86.Slot || c.Addr-fn.Entry > 4 {
		return 0, false
	}
	return c.Ptr.Consts[0], true
}

// byName is what a call of the symbol name reaches in the runtime. A
// symbol the runtime does not define is another object's, whose calls
// are its own: it reaches nothing here.
func (l *linker) byName(name string) targets {
	return targets{nodes: l.exports[name]}
}

// symbol is what object o's reference to the symbol name reaches: the
// definitions of every object, any of which the loader may bind it to
// (the first in its search order; another object's calls are its own,
// but those its tail calls make are the caller's).
func (l *linker) symbol(o int, name string) targets {
	return targets{nodes: l.defined[name]}
}

// everywhere are the definitions of the symbol name in every object.
func (l *linker) everywhere(name string) targets {
	return targets{nodes: l.defined[name]}
}

// slot is what a call through the word at addr in object o reaches.
func (l *linker) slot(o int, addr uint64) targets {
	k := slotKey{o, addr}
	if t, ok := l.slots[k]; ok {
		return t
	}
	// A word that leads to itself (a thunk through its own slot) reaches
	// nothing more.
	l.slots[k] = targets{}
	locs, t := l.pointees(loc{o, addr})
	t.add(l.functions(locs))
	l.slots[k] = t
	return t
}

// resolved is what an IFUNC resolver may return: the addresses it
// returns where they are all constants (memcpy's, picked by the
// processor's features); where it computes what it returns, what its
// paths followed apart pick (chosen), or else the functions whose
// addresses it takes and those of the names it gives its calls (glibc's
// time and gettimeofday look the vDSO's up), or, if it names none, the
// vDSO's.
func (l *linker) resolved(o int, resolver uint64) targets {
	n, ok := l.index[o][resolver]
	if !ok {
		return targets{unknown: true}
	}
	fn := l.nodes[n].fn
	var t targets
	computed := len(fn.Results) == 0
	for _, v := range fn.Results {
		if v.Kind != x86.Const {
			computed = true
			break
		}
		for _, addr := range v.Consts {
			t.add(l.at(o, addr))
		}
	}
	if !computed {
		return t
	}
	if t, ok := l.chosen(o, fn, l.objs[o].Choices[resolver]); ok {
		return t
	}
	t = targets{}
	for _, r := range fn.Refs {
		t.add(l.at(o, r))
	}
	named := false
	for _, c := range fn.Calls {
		if name, ok := l.objs[o].NameArgs[c.Addr]; ok {
			t.add(l.byName(name))
			named = true
		}
	}
	if !named {
		t.nodes = append(t.nodes, l.vdso...)
	}
	return t
}

// chosen is what a resolver whose paths were followed apart may return:
// the pick of each path this machine's vDSO leaves reachable, a
// constant or the function of the name a lookup was given. It says
// false where there are no paths, or a pick is neither.
func (l *linker) chosen(o int, fn *x86.Function, choices []x86.Choice) (targets, bool) {
	var t targets
	for _, ch := range choices {
		if name, ok := l.vdsoDecides(o, fn, ch); ok {
			l.assumed[name] = true
			continue
		}
		if ch.Result.Kind == x86.Const {
			for _, addr := range ch.Result.Consts {
				t.add(l.at(o, addr))
			}
			continue
		}
		at, ok := ch.Result.Origin()
		name, named := l.objs[o].NameArgs[at]
		if !ok || !named {
			return targets{}, false
		}
		t.add(l.byName(name))
	}
	return t, len(choices) > 0
}

// vdsoDecides says whether the path of a resolver's pick is one this
// machine's vDSO leaves unreachable, and the name that makes it so. The
// path found null what a call given a name the vDSO exports gave, a
// lookup of it in the vDSO, which finds it: the object it was found in,
// the symbol, the address made from them are not null. Or it found null
// a word of the loader's data the resolver gives such a lookup: the
// vDSO's map (glibc's GLRO(dl_sysinfo_map)), which the loader sets up
// wherever the kernel maps a vDSO, as it does here. The inference is
// then of this machine, as it is of this libc: the policy records the
// names (Result.VDSO) and run checks them.
func (l *linker) vdsoDecides(o int, fn *x86.Function, ch x86.Choice) (string, bool) {
	if l.vdsoObj < 0 {
		return "", false
	}
	exported := func(at uint64) (string, bool) {
		name, ok := l.objs[o].NameArgs[at]
		if !ok {
			return "", false
		}
		_, ok = l.objs[l.vdsoObj].Exports[name]
		return name, ok
	}
	for _, v := range ch.Null {
		switch v.Kind {
		case x86.Ret, x86.Out, x86.Found:
			if name, ok := exported(v.Consts[0]); ok {
				return name, true
			}
		case x86.Slot, x86.Field:
			for _, c := range fn.Calls {
				if name, ok := exported(c.Addr); ok && slices.ContainsFunc(c.Args[:], v.Equal) {
					return name, true
				}
			}
		}
	}
	return "", false
}

// value is what a call through a pointer whose value is v reaches, in
// object o. Parameters are the caller's business.
func (l *linker) value(o int, v x86.Value) targets {
	switch v.Kind {
	case x86.Const:
		var t targets
		for _, addr := range v.Consts {
			t.add(l.at(o, addr))
		}
		return t
	case x86.Slot:
		return l.slot(o, v.Consts[0])
	case x86.Field:
		if b := v.Base(); b.Kind == x86.Slot {
			locs, t := l.follow(loc{o, b.Consts[0]}, v.Path())
			t.add(l.functions(locs))
			return t
		}
	case x86.Demangled:
		return targets{pools: 1 << poolMangled}
	}
	return targets{unknown: true}
}

// call is what a call instruction reaches, but for a pointer that is a
// parameter.
func (l *linker) call(o int, c *x86.Call) targets {
	if c.Direct {
		return l.at(o, c.Target)
	}
	return l.value(o, c.Ptr)
}

// trampoline says whether a function of object o is one of the loader's
// lazy-binding trampolines: it jumps to what a call returned, the
// function that call bound to the PLT entry being resolved.
func (l *linker) trampoline(o int, fn *x86.Function) bool {
	if o != l.loader {
		return false
	}
	for _, c := range fn.Calls {
		if c.Tail && c.Ptr.Kind == x86.Ret {
			return true
		}
	}
	return false
}

// trampolines are the loader's lazy-binding trampolines: its functions
// that jump to what a call returned, whose addresses it takes (to store
// them in each object's GOT[2]).
func (l *linker) trampolines() targets {
	var t targets
	if l.loader < 0 {
		return t
	}
	taken := l.taken(l.loader)
	for _, addr := range sortedKeys(l.objs[l.loader].Functions) {
		if n := l.index[l.loader][addr]; taken[n] && l.trampoline(l.loader, l.nodes[n].fn) {
			t.nodes = append(t.nodes, n)
		}
	}
	return t
}

// counts says whether calls made by node t count for node n's
// compartment: t is in the same object, or in the runtime, which acts
// for its callers.
func (l *linker) counts(n, t int) bool {
	a, b := l.nodes[n].obj, l.nodes[t].obj
	return a == b || l.runtime[b]
}
