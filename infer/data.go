package infer

import (
	"slices"
	"sort"

	"github.com/syscell/syscell/infer/image"
	"github.com/syscell/syscell/infer/x86"
)

// chunkedSections are the sections whose words count only once code or
// data that can run reaches them: the compiler's own data (function
// tables, structures of callbacks), which code reaches by an address it
// takes. The words of any other section (init and fini arrays, TLS
// images, the GOT, sections code walks from a __start_ symbol to a
// __stop_ one) are live as they always were, but for a section code
// checks pointers against (checked): its words are tables a pointer
// that passed the check is one of, and a table counts once live code
// or data takes its address, as the pointer had to come from there.
var chunkedSections = map[string]bool{".data.rel.ro": true, ".data": true, ".rodata": true}

// chunks splits an object's data into the pieces code reaches as a
// whole: a piece starts at a 16-aligned address something takes (code's
// LEA, a relocated word, an export) and runs to the next such address.
// The analysis assumes code reads a word of data only through an address
// taken of that word or of an earlier one with no other start in
// between, or by copying it: C's objects, which a pointer does not
// leave.
type chunks struct {
	// starts are the pieces' first addresses, sorted.
	starts []uint64
	// words are the relocated words of each piece that lie in a chunked
	// section.
	words [][]uint64
	// chunked says a word lies in a chunked section.
	chunked map[uint64]bool
}

// objectAlign is the alignment of any object that holds two words or
// more: the x86-64 ABI aligns arrays of 16 bytes or more to 16, and gcc,
// optimizing, every aggregate as large. An address taken that is not so
// aligned is inside an object (a field's, an element's, a sub-structure
// another function copies) or starts one of a single word: it starts no
// piece, whose words stay with the piece before.
const objectAlign = 16

// newChunks splits object o's data.
func newChunks(o *Object) *chunks {
	c := &chunks{chunked: map[uint64]bool{}}
	if o.Absolute {
		// Position-dependent code takes addresses as immediates, which
		// the analysis does not tell from numbers: every word counts.
		return c
	}
	checked := map[uint64]bool{}
	for _, fn := range o.Functions {
		for _, ck := range fn.Checks {
			checked[ck.Against] = true
		}
	}
	var secs []image.Range
	for _, s := range o.Sections {
		if chunkedSections[s.Name] || checked[s.Start] {
			secs = append(secs, s.Range)
		}
	}
	inData := func(addr uint64) bool { return !o.isCode(addr) }
	starts := map[uint64]bool{}
	start := func(addr uint64) {
		if addr%objectAlign == 0 {
			starts[addr] = true
		}
	}
	for _, fn := range o.Functions {
		for _, a := range fn.Data {
			start(a)
		}
	}
	for _, w := range o.Words {
		if w.Kind == image.Local && inData(w.Addr) {
			start(w.Addr)
		}
	}
	for _, a := range o.Data {
		start(a)
	}
	// No object spans two sections: the linker lays out each input
	// section whole. Without these bounds the last piece of a chunked
	// section ran on into the next (libc's .data.rel.ro into .dynamic and
	// the GOT), so that a GOT slot code reads made live the function
	// table at the end of .data.rel.ro (sunrpc's), which no live code
	// takes.
	for _, s := range o.Sections {
		starts[s.Start], starts[s.End] = true, true
	}
	c.starts = sortedKeys(starts)
	c.words = make([][]uint64, len(c.starts))
	for _, addr := range sortedKeys(o.Words) {
		if !slices.ContainsFunc(secs, func(r image.Range) bool { return addr >= r.Start && addr < r.End }) {
			continue
		}
		if k := c.of(addr); k >= 0 {
			c.chunked[addr] = true
			c.words[k] = append(c.words[k], addr)
		}
	}
	return c
}

// of is the piece that holds addr, -1 if none does.
func (c *chunks) of(addr uint64) int {
	return sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > addr }) - 1
}

// liveData marks pieces of data and the functions they lead to.
type liveData struct {
	l *linker
	// chunks are each object's pieces, live which are.
	chunks []*chunks
	live   [][]bool
	// read are each object's GOT slots its code reads (readSlots).
	read []map[uint64]bool
	// work are the pieces newly live: object, piece.
	work [][2]int
}

func newLiveData(l *linker) *liveData {
	d := &liveData{l: l, chunks: make([]*chunks, len(l.objs)), live: make([][]bool, len(l.objs)), read: make([]map[uint64]bool, len(l.objs))}
	for i, o := range l.objs {
		d.chunks[i] = newChunks(o)
		d.read[i] = readSlots(o)
		d.live[i] = make([]bool, len(d.chunks[i].starts))
	}
	return d
}

// mark marks the piece of object i that holds addr.
func (d *liveData) mark(i int, addr uint64) {
	if k := d.chunks[i].of(addr); k >= 0 && !d.live[i][k] {
		d.live[i][k] = true
		d.work = append(d.work, [2]int{i, k})
	}
}

// wordLive says whether the word at addr of object i counts: it lies in
// a piece that is live, or outside the chunked sections.
func (d *liveData) wordLive(i int, addr uint64) bool {
	c := d.chunks[i]
	return !c.chunked[addr] || d.live[i][c.of(addr)]
}

// word is what the word at addr of object i leads to: a function, or a
// piece of data of i (marked).
func (d *liveData) word(i int, addr uint64) targets {
	l := d.l
	switch w := l.objs[i].Words[addr]; {
	case w.Kind == image.Local && l.objs[i].isCode(w.Addr):
		return l.at(i, w.Addr)
	case w.Kind == image.Local:
		d.mark(i, w.Addr)
	case w.Kind == image.Symbol && !w.Call:
		return l.everywhere(w.Name)
	}
	return targets{}
}

// loaded is what code of object i reads from the word at addr, one
// word: the function it points to, or the piece of data (marked).
func (d *liveData) loaded(i int, addr uint64) targets {
	l := d.l
	w, ok := l.objs[i].Words[addr]
	switch {
	case !ok:
		return targets{}
	case w.Kind == image.Resolved:
		return l.resolved(i, w.Addr)
	}
	return d.word(i, addr)
}

// pieces are what the pieces marked since the last call lead to.
func (d *liveData) pieces() targets {
	var t targets
	for len(d.work) > 0 {
		p := d.work[len(d.work)-1]
		d.work = d.work[:len(d.work)-1]
		for _, addr := range d.chunks[p[0]].words[p[1]] {
			t.add(d.word(p[0], addr))
		}
	}
	return t
}

// readSlots are the words of object o's GOT (.got) that some function of
// it reads, by a load (into any register) or a call through the slot:
// what live code reads from such a slot is live, not what every slot
// holds. A slot no function reads the ways the analysis sees is read
// some other way, and counts as any word of data outside the chunked
// sections does.
func readSlots(o *Object) map[uint64]bool {
	var got []image.Range
	for _, sec := range o.Sections {
		if sec.Name == ".got" {
			got = append(got, sec.Range)
		}
	}
	in := func(addr uint64) bool {
		return slices.ContainsFunc(got, func(r image.Range) bool { return addr >= r.Start && addr < r.End })
	}
	read := map[uint64]bool{}
	for _, fn := range o.Functions {
		for _, a := range append(append([]uint64(nil), fn.Loads...), fn.Reads...) {
			if in(a) {
				read[a] = true
			}
		}
		for _, c := range fn.Calls {
			if !c.Direct && c.Ptr.Kind == x86.Slot && in(c.Ptr.Consts[0]) {
				read[c.Ptr.Consts[0]] = true
			}
		}
	}
	return read
}
