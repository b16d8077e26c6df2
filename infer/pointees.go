package infer

import (
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/x86"
)

// loc is a word of an object, or a place in it a word points to.
type loc struct {
	obj  int
	addr uint64
}

// stored is a value a function of an object stores to a word.
type stored struct {
	obj int
	v   x86.Value
}

// pointees are the places the word at lc may point to. A GOT slot
// holds its symbol's address, a data object's or the runtime's
// functions'; an IFUNC's slot what its resolver returns. A word of data
// that is read-only once relocated holds the address its relocation
// gives it or one code stores there before it is sealed: a constant
// address, or, stored by the loader, a function it looked up by name:
// the one of the name the lookup was given, where the stored address
// was made from its result, or any it may look up (poolLoader).
// Anything else, a word of writable data above all, may
// hold anything: unknown. Stores are found where code writes the word
// by name, RIP-relative or through the GOT slot of the object that
// holds it; the analysis assumes no other write reaches a word that
// holds a function's address.
func (l *linker) pointees(lc loc) ([]loc, targets) {
	obj := l.objs[lc.obj]
	w, ok := obj.Words[lc.addr]
	switch {
	case ok && w.Kind == image.Symbol:
		if d, ok := l.data[w.Name]; ok {
			return []loc{{d.obj, d.addr}}, targets{}
		}
		return l.locsOf(l.symbol(lc.obj, w.Name)), targets{}
	case ok && w.Kind == image.Resolved:
		return l.locsOf(l.resolved(lc.obj, w.Addr)), targets{}
	case !obj.readOnly(lc.addr):
		return nil, targets{unknown: true}
	}
	var locs []loc
	var t targets
	if ok {
		locs = append(locs, loc{lc.obj, w.Addr})
	}
	for _, st := range l.storesAt(lc) {
		switch {
		case st.v.Kind == x86.Const:
			for _, c := range st.v.Consts {
				locs = append(locs, loc{st.obj, c})
			}
		case st.obj == l.loader:
			if name, ok := l.objs[st.obj].foundName(st.v); ok {
				locs = append(locs, l.locsOf(l.byName(name))...)
			} else {
				t.pools |= 1 << poolLoader
			}
		default:
			t.unknown = true
		}
	}
	return locs, t
}

// follow are the places reached from the word at lc through a Field's
// path: at each step, the word that many bytes past what the previous
// word points to.
func (l *linker) follow(lc loc, path []int64) ([]loc, targets) {
	locs, t := l.pointees(lc)
	for _, off := range path {
		var next []loc
		for _, p := range locs {
			more, mt := l.pointees(loc{p.obj, p.addr + uint64(off)})
			next = append(next, more...)
			t.add(mt)
		}
		locs = next
	}
	return locs, t
}

// functions are the functions at places.
func (l *linker) functions(locs []loc) targets {
	var t targets
	for _, p := range locs {
		t.add(l.at(p.obj, p.addr))
	}
	return t
}

// locsOf are the places of functions.
func (l *linker) locsOf(t targets) []loc {
	out := make([]loc, len(t.nodes))
	for i, n := range t.nodes {
		out[i] = loc{l.nodes[n].obj, l.nodes[n].fn.Entry}
	}
	return out
}

// storesAt lists the values code stores to the word at lc, found once
// for all words: stores to a RIP-relative word, and through a word
// that holds a data object's address (a GOT slot), a step away.
func (l *linker) storesAt(lc loc) []stored {
	if l.stores == nil {
		l.stores = map[loc][]stored{}
		for i, o := range l.objs {
			for _, addr := range sortedKeys(o.Functions) {
				for _, st := range o.Functions[addr].Stores {
					for _, dest := range l.destinations(i, st.Dest) {
						l.stores[dest] = append(l.stores[dest], stored{i, st.Value})
					}
				}
			}
		}
	}
	return l.stores[lc]
}

// destinations are the words a store to dest, in object o, may write.
func (l *linker) destinations(o int, dest x86.Value) []loc {
	if dest.Kind == x86.Slot {
		return []loc{{o, dest.Consts[0]}}
	}
	base := loc{o, dest.Base().Consts[0]}
	path := dest.Path()
	if len(path) != 1 {
		return nil
	}
	w, ok := l.objs[o].Words[base.addr]
	if !ok || w.Kind != image.Symbol {
		return nil
	}
	d, ok := l.data[w.Name]
	if !ok {
		return nil
	}
	return []loc{{d.obj, d.addr + uint64(path[0])}}
}
