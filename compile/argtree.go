package compile

import (
	"math/bits"
	"sort"

	"github.com/syscell/syscell/bpf"
)

// fnNode builds the decision for a syscall's function, sharing the nodes of
// functions already built.
func (c *compiler) fnNode(f *function) nodeID {
	if id, ok := c.memo[f.key]; ok {
		return id
	}
	id := c.d.ret(f.def.Ret())
	if !f.constant() {
		id = c.bestFirstWord(f)
	}
	c.memo[f.key] = id
	return id
}

// bestFirstWord builds the decision starting from the high half of the first
// argument and, when the function reads it too, from its low half, and keeps
// the one with the shorter paths. Which half should go first depends on the
// conditions: "arg != 38" is decided by the low half alone for almost every
// value, while a set of allowed values shares one high half.
func (c *compiler) bestFirstWord(f *function) nodeID {
	ws := f.words()
	best := c.wordNode(f, ws[0])
	if len(ws) < 2 || ws[1] != ws[0]-4 {
		return best
	}
	alt := c.wordNode(f, ws[1])
	if c.d.meanPath(alt, f.probes) < c.d.meanPath(best, f.probes) {
		return alt
	}
	return best
}

// wordNode branches on word w. Masked atoms are decided one at a time;
// comparisons split the word's values into classes on which every atom is
// constant, and the router picks the tests that tell the classes apart.
func (c *compiler) wordNode(f *function, w uint32) nodeID {
	atoms := f.atomsOn(w)
	for _, a := range atoms {
		if a.op == opMask {
			t := c.fnNode(f.substitute(fixAtom(a, true)))
			e := c.fnNode(f.substitute(fixAtom(a, false)))
			return c.maskTest(a, t, e)
		}
	}
	var spans []span
	for _, cl := range classes(atoms) {
		sub := f.substitute(fixValue(w, cl[0]))
		spans = append(spans, span{lo: cl[0], hi: cl[1], to: c.fnNode(sub), weight: 1})
	}
	spans = mergeSpans(spans)
	if m, in, rest, ok := cube(spans); ok {
		return c.d.test(w, bpf.JmpJset, ^m, c.d.route(w, rest, sizeCost), in)
	}
	return c.d.route(w, spans, sizeCost)
}

// maskTest tests (w & mask) == k with a single jset when it can.
func (c *compiler) maskTest(a atom, t, e nodeID) nodeID {
	switch {
	case a.k == 0:
		return c.d.test(a.w, bpf.JmpJset, a.mask, e, t)
	case a.k == a.mask && bits.OnesCount32(a.mask) == 1:
		return c.d.test(a.w, bpf.JmpJset, a.mask, t, e)
	}
	return c.d.andEq(a.w, a.mask, a.k, t, e)
}

// fixAtom decides atom a (on both its polarities).
func fixAtom(a atom, val bool) func(atom) (bool, bool) {
	return func(b atom) (bool, bool) {
		neg := b.neg
		b.neg = false
		if b != a {
			return false, false
		}
		return val != neg, true
	}
}

// fixValue decides every comparison on word w for the value v.
func fixValue(w, v uint32) func(atom) (bool, bool) {
	return func(a atom) (bool, bool) {
		if a.w != w || a.op == opMask {
			return false, false
		}
		return a.eval(v), true
	}
}

// classes splits the 32-bit values into intervals on which every atom is
// constant.
func classes(atoms []atom) [][2]uint32 {
	cuts := map[uint64]bool{0: true}
	for _, a := range atoms {
		switch a.op {
		case opEq:
			cuts[uint64(a.k)] = true
			cuts[uint64(a.k)+1] = true
		case opGt:
			cuts[uint64(a.k)+1] = true
		case opGe:
			cuts[uint64(a.k)] = true
		}
	}
	starts := make([]uint64, 0, len(cuts))
	for s := range cuts {
		if s <= uint64(^uint32(0)) {
			starts = append(starts, s)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	out := make([][2]uint32, len(starts))
	for i, s := range starts {
		end := uint64(^uint32(0))
		if i+1 < len(starts) {
			end = starts[i+1] - 1
		}
		out[i] = [2]uint32{uint32(s), uint32(end)}
	}
	return out
}
