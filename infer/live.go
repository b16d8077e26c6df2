package infer

import (
	"github.com/syscell/syscell/infer/x86"
)

// findLive marks the functions that can run in the process, as
// sysfilter's "vacuuming" does and further: from its roots (roots),
// through calls, resolved as the solver resolves them, the addresses
// live code takes, its own functions' or, through GOT slots it reads,
// other objects', and the pieces of data (chunks) live code takes the
// address of or copies, with the functions and pieces their words point
// to. A function whose address only dead code or dead data takes is no
// indirect call's target.
func (l *linker) findLive() {
	l.live = make([]bool, len(l.nodes))
	l.pieces = newLiveData(l)
	var work []int
	mark := func(t targets) {
		for _, n := range t.nodes {
			if !l.live[n] {
				l.live[n] = true
				work = append(work, n)
			}
		}
	}
	for i := range l.objs {
		mark(l.roots(i))
	}
	for mark(l.pieces.pieces()); len(work) > 0; mark(l.pieces.pieces()) {
		n := work[len(work)-1]
		work = work[:len(work)-1]
		mark(l.reached(n))
	}
}

// roots are the functions of object i that start without a call from
// live code: its entry point (the program's and the loader's, where
// processes start; not a library's, which runs only when the library is
// the command), its constructors and destructors, the functions the
// words of its data outside the chunked sections point to (but the GOT
// slots its code reads), and those it looks up by name. The pieces of
// data it exports are live, as other objects may read them. Every
// export of a library that only dlopen loads is a root: its loader
// looks its functions up by names it computes (NSS's
// _nss_systemd_getpwnam_r).
func (l *linker) roots(i int) targets {
	o := l.objs[i]
	var t targets
	if l.dlopened[i] {
		for _, name := range sortedKeys(o.Exports) {
			for _, e := range o.Exports[name] {
				t.add(l.export(i, e))
			}
		}
	}
	if i == l.program || i == l.loader {
		t.add(l.at(i, o.Entry))
	}
	for _, addr := range o.InitFini {
		t.add(l.at(i, addr))
	}
	for _, name := range sortedKeys(o.Data) {
		l.pieces.mark(i, o.Data[name])
	}
	for _, addr := range sortedKeys(o.Words) {
		if l.pieces.chunks[i].chunked[addr] || l.pieces.read[i][addr] {
			continue
		}
		t.add(l.pieces.word(i, addr))
	}
	for _, name := range o.Looked {
		t.add(l.everywhere(name))
	}
	return t
}

// reached are the functions node n may call or take the address of.
func (l *linker) reached(n int) targets {
	i, fn := l.nodes[n].obj, l.nodes[n].fn
	var t targets
	for k := range fn.Calls {
		c := &fn.Calls[k]
		if c.Direct || c.Ptr.Kind != x86.Param {
			t.add(l.call(i, c))
		}
		if ct, ok := l.checked(i, fn, c); ok {
			t.add(ct)
		}
		if name := l.objs[i].importCalled(c); name != "" {
			// The loader binds the name to the first object that
			// defines it: any of them may be.
			t.add(l.everywhere(name))
		}
	}
	for _, r := range append(append([]uint64(nil), fn.Refs...), fn.Imms...) {
		t.add(l.at(i, r))
	}
	for _, a := range fn.Data {
		l.pieces.mark(i, a)
	}
	for _, a := range append(append([]uint64(nil), fn.Loads...), fn.Reads...) {
		t.add(l.pieces.loaded(i, a))
	}
	for _, a := range fn.Reads {
		// A structure's copy: the rest of its piece may be read.
		l.pieces.mark(i, a)
	}
	return t
}
