package infer

import (
	"math/bits"
	"slices"

	"github.com/syscell/syscell/infer/x86"
)

// maxNr bounds the x86_64 system-call numbers a set holds.
const maxNr = 512

// nrSet is a set of x86_64 system-call numbers.
type nrSet [maxNr / 64]uint64

func (s *nrSet) add(nr uint64) bool {
	if nr >= maxNr {
		return false
	}
	s[nr/64] |= 1 << (nr % 64)
	return true
}

// union adds o to s and says whether s changed.
func (s *nrSet) union(o *nrSet) bool {
	changed := false
	for i := range s {
		if n := s[i] | o[i]; n != s[i] {
			s[i], changed = n, true
		}
	}
	return changed
}

// each calls f with every number of s, in order.
func (s *nrSet) each(f func(nr uint64)) {
	for i, w := range s {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			f(uint64(i*64 + b))
			w &^= 1 << b
		}
	}
}

// summary is what a function can do, as far as the calls it can make go,
// through everything it calls that belongs to the same compartment.
type summary struct {
	// nrs are the numbers of the system calls it can make.
	nrs nrSet
	// all says it can make a call whose number the analysis does not
	// know: any call.
	all bool
	// params are the argument registers whose value at entry is the
	// number of a call it makes (bit i: argument i).
	params uint8
	// calls are the argument registers whose value at entry is a
	// function it calls (a callback).
	calls uint8
	// fields are the fields of structures passed by address whose value
	// is the number of a call it makes (glibc's set*id calls in a
	// multi-threaded process).
	fields  [maxFieldDeps]fieldDep
	nfields uint8
	// pools are the pools of functions its indirect calls may reach
	// without the analysis telling which of them (bit p: pool p).
	pools uint8
	// guarded are what it does only where a Guard on its arguments
	// holds, sorted by guard: a caller passing constants that clear
	// every bit of a guard's mask does none of that part. Few functions
	// have any: the slice keeps the others' summaries small. Summaries
	// copied share it, so it is never changed in place.
	guarded []guardedCalls
}

// equal says whether s and o say the same.
func (s *summary) equal(o *summary) bool {
	return s.nrs == o.nrs && s.all == o.all && s.params == o.params && s.calls == o.calls && s.fields == o.fields &&
		s.nfields == o.nfields && s.pools == o.pools && slices.Equal(s.guarded, o.guarded)
}

// guardedCalls are the calls made, and the pools reached, only where
// guard holds.
type guardedCalls struct {
	guard x86.Guard
	nrs   nrSet
	all   bool
	pools uint8
}

// maxGuarded bounds the guarded parts a summary keeps. Beyond, the
// parts of the greatest guards become unconditional: which ones depends
// only on the set of guards, which only grows as the solver runs, so
// that a part, once unconditional, stays so.
const maxGuarded = 8

// guardLess orders guards by argument, then mask.
func guardLess(a, b x86.Guard) bool { return a.Arg < b.Arg || a.Arg == b.Arg && a.Mask < b.Mask }

// addGuarded adds calls made where guard holds.
func (s *summary) addGuarded(guard x86.Guard, nrs *nrSet, all bool, pools uint8) {
	i, found := slices.BinarySearchFunc(s.guarded, guard, func(g guardedCalls, t x86.Guard) int {
		switch {
		case guardLess(g.guard, t):
			return -1
		case g.guard == t:
			return 0
		}
		return 1
	})
	switch {
	case found:
		g := s.guarded[i]
		g.nrs.union(nrs)
		g.all, g.pools = g.all || all, g.pools|pools
		if g != s.guarded[i] {
			s.guarded = slices.Clone(s.guarded)
			s.guarded[i] = g
		}
		return
	case i == maxGuarded:
		s.unguard(&guardedCalls{nrs: *nrs, all: all, pools: pools})
		return
	}
	s.guarded = slices.Insert(slices.Clone(s.guarded), i, guardedCalls{guard: guard, nrs: *nrs, all: all, pools: pools})
	if len(s.guarded) > maxGuarded {
		s.unguard(&s.guarded[maxGuarded])
		s.guarded = s.guarded[:maxGuarded]
	}
}

// unguard makes g's calls unconditional.
func (s *summary) unguard(g *guardedCalls) {
	s.nrs.union(&g.nrs)
	s.all, s.pools = s.all || g.all, s.pools|g.pools
}

// A pool is a set of the runtime's functions an indirect call may reach
// when the analysis knows where the pointer came from but not which
// function it is.
const (
	// poolRuntime is what an indirect call of the runtime may reach when
	// nothing more is known: any of its functions whose address is
	// taken, by itself or by another object, or looked up by name.
	poolRuntime = iota
	// poolOther is what another object's indirect call may reach in the
	// runtime: the functions whose addresses other objects take.
	poolOther
	// poolMangled is what a pointer glibc demangles may be: the
	// functions whose addresses it mangles, those its callers give it
	// to keep mangled (atexit's), and those it looks up by name.
	poolMangled
	// poolLoader is what the loader stores in its read-only data at
	// start-up besides addresses it takes: the functions it looks up by
	// name (libc's malloc, the vDSO's clock_gettime).
	poolLoader
	numPools
)

// fieldDep is a field: the word at an offset in the structure an
// argument points to.
type fieldDep struct {
	arg uint8
	off int64
}

// maxFieldDeps bounds the fields a summary follows; a function whose
// calls depend on more can make any call.
const maxFieldDeps = 4

// addField notes that the number of a call is a field.
func (s *summary) addField(d fieldDep) {
	for _, f := range s.fields[:s.nfields] {
		if f == d {
			return
		}
	}
	if s.nfields == maxFieldDeps {
		s.all = true
		return
	}
	s.fields[s.nfields] = d
	s.nfields++
}

// merge adds o to s and says whether s changed.
func (s *summary) merge(o *summary) bool {
	before := *s
	s.nrs.union(&o.nrs)
	s.all = s.all || o.all
	s.params |= o.params
	s.calls |= o.calls
	for _, f := range o.fields[:o.nfields] {
		s.addField(f)
	}
	s.pools |= o.pools
	for _, g := range o.guarded {
		s.addGuarded(g.guard, &g.nrs, g.all, g.pools)
	}
	return !s.equal(&before)
}

// place adds o to s where guard holds: o's calls and pools are made
// only then, and those o makes under guards of its own where those
// hold (both hold); what o makes of s's arguments is s's in any case.
func (s *summary) place(guard x86.Guard, o *summary) {
	if guard.Mask == 0 {
		s.merge(o)
		return
	}
	s.addGuarded(guard, &o.nrs, o.all, o.pools)
	for _, g := range o.guarded {
		s.addGuarded(g.guard, &g.nrs, g.all, g.pools)
	}
	s.params |= o.params
	s.calls |= o.calls
	for _, f := range o.fields[:o.nfields] {
		s.addField(f)
	}
}

// flat is s with what it does under guards made unconditional: what a
// call with arguments the analysis does not know can do.
func (s summary) flat() summary {
	for i := range s.guarded {
		s.unguard(&s.guarded[i])
	}
	s.guarded = nil
	return s
}
