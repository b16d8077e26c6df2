package infer

import (
	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/x86"
)

// checked is what an indirect call through a table checked to lie in a
// section may reach: glibc calls a FILE's functions through its vtable
// only once it has checked that the vtable lies in the section that
// holds its vtables (__libc_IO_vtables), so the call reaches one of the
// functions that section's words point to. The call must read its
// pointer from a table whose address fn subtracted the start of a
// section from. Tables outside the section (fopencookie's, another
// namespace's libc) are other code's, as _IO_vtable_check requires.
// Only the tables live code or data takes the address of count (the
// pieces of the section that are live): a FILE gets its vtable from
// whoever made it. Before liveness is known, those live so far: the
// functions of a table that becomes live later are marked with it.
func (l *linker) checked(o int, fn *x86.Function, c *x86.Call) (targets, bool) {
	if c.Direct || c.Ptr.Kind != x86.Field {
		return targets{}, false
	}
	parent := c.Ptr.Parent()
	for _, ck := range fn.Checks {
		if !ck.Value.Equal(parent) {
			continue
		}
		if sec, ok := l.sectionAt(o, ck.Against); ok {
			return l.liveWordsIn(o, sec), true
		}
	}
	return targets{}, false
}

// sectionAt is the section of object o that starts at addr.
func (l *linker) sectionAt(o int, addr uint64) (image.Range, bool) {
	for _, s := range l.objs[o].Sections {
		if s.Start == addr {
			return s.Range, true
		}
	}
	return image.Range{}, false
}

// wordsIn are the functions the relocated words of a range of object o
// point to.
func (l *linker) wordsIn(o int, r image.Range) targets {
	return l.wordsWhere(o, r, func(uint64) bool { return true })
}

// liveWordsIn are the functions the live relocated words of a range of
// object o point to.
func (l *linker) liveWordsIn(o int, r image.Range) targets {
	return l.wordsWhere(o, r, func(addr uint64) bool { return l.pieces.wordLive(o, addr) })
}

// wordsWhere are the functions the relocated words of a range of object
// o that keep says count point to.
func (l *linker) wordsWhere(o int, r image.Range, keep func(addr uint64) bool) targets {
	var t targets
	for _, addr := range sortedKeys(l.objs[o].Words) {
		if addr < r.Start || addr >= r.End || !keep(addr) {
			continue
		}
		if w := l.objs[o].Words[addr]; w.Kind == image.Local {
			t.add(l.at(o, w.Addr))
		}
	}
	return t
}
