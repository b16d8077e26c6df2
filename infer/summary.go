package infer

import "math/bits"

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
	return *s != before
}
