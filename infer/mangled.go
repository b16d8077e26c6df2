package infer

import "github.com/syscell/syscell/infer/x86"

// mangled are the functions a pointer glibc demangles to call may be:
// every value the runtime's code mangles (PTR_MANGLE) to store it. A
// constant or a word is resolved as any pointer; an argument is what
// the function's callers pass (atexit's function, from anywhere); what
// a call of dlsym returns is the function its name names, none of the
// runtime's when the name is computed (libgcc_s's unwinder, gconv and
// NSS modules); anything else can be any function (poolRuntime).
func (p *Program) mangled() targets {
	l := p.s.linker
	var out targets
	for i, o := range l.objs {
		if !l.runtime[i] {
			continue
		}
		for _, addr := range sortedKeys(o.Functions) {
			n := l.index[i][addr]
			for _, v := range o.Functions[addr].Mangles {
				out.add(p.pointer(n, v, map[fieldKey]bool{}))
			}
		}
	}
	if out.unknown {
		out.unknown, out.pools = false, out.pools|1<<poolRuntime
	}
	return out
}

// pointer is what a pointer whose value in node n is v may point to.
// seen holds the parameters being followed, against cycles.
func (p *Program) pointer(n int, v x86.Value, seen map[fieldKey]bool) targets {
	l := p.s.linker
	o := l.nodes[n].obj
	switch v.Kind {
	case x86.Param:
		k := fieldKey{n, fieldDep{arg: v.Arg, off: -1}}
		if seen[k] {
			return targets{}
		}
		seen[k] = true
		var out targets
		for _, cs := range p.s.callersOf(n) {
			out.add(p.pointer(cs.n, cs.c.Args[v.Arg], seen))
		}
		return out
	case x86.Ret:
		name, ok := l.objs[o].LookupAt[v.Consts[0]]
		if !ok {
			return targets{unknown: true}
		}
		return l.byName(name)
	}
	return l.value(o, v)
}
