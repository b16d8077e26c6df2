package bpf

import (
	"math"
	"math/bits"
)

// fact over-approximates the values a 32-bit word holds on the paths that
// reach an instruction: a range, and bits known to be clear or set.
type fact struct {
	lo, hi      uint32
	zeros, ones uint32
}

var (
	// anything holds for every value.
	anything = fact{hi: math.MaxUint32}
	// nothing holds for no value: the paths it describes cannot happen.
	nothing = fact{lo: 1}
)

// exactly is the fact of one known value.
func exactly(v uint32) fact { return fact{lo: v, hi: v, zeros: ^v, ones: v} }

// empty reports whether no value satisfies f.
func (f fact) empty() bool { return f.lo > f.hi || f.zeros&f.ones != 0 }

// join is the fact that holds on the paths of f and on those of g.
func (f fact) join(g fact) fact {
	return fact{lo: min(f.lo, g.lo), hi: max(f.hi, g.hi), zeros: f.zeros & g.zeros, ones: f.ones & g.ones}
}

// tighten lets the range and the bits inform each other: the known bits
// bound the range, and the bits that lo and hi share are known.
func (f fact) tighten() fact {
	f.lo = max(f.lo, f.ones)
	f.hi = min(f.hi, ^f.zeros)
	if f.empty() {
		return nothing
	}
	shared := ^uint32(uint64(math.MaxUint64) >> (64 - bits.Len32(f.lo^f.hi)))
	f.ones |= f.lo & shared
	f.zeros |= ^f.lo & shared
	return f
}

// and is the fact of A & k for A in f.
func (f fact) and(k uint32) fact {
	return fact{hi: min(f.hi, k), zeros: f.zeros | ^k, ones: f.ones & k}.tighten()
}

// refine narrows f to the values for which the conditional jump operation
// op against k comes out as taken says. An empty result means that side of
// the jump is never taken.
func (f fact) refine(op uint16, k uint32, taken bool) fact {
	switch {
	case op == JmpJeq && taken:
		f.lo, f.hi = max(f.lo, k), min(f.hi, k)
		f.zeros, f.ones = f.zeros|^k, f.ones|k
	case op == JmpJeq:
		switch {
		case f.lo == k && f.hi == k:
			return nothing
		case f.lo == k:
			f.lo++
		case f.hi == k:
			f.hi--
		}
	case op == JmpJgt && taken:
		if k == math.MaxUint32 {
			return nothing
		}
		f.lo = max(f.lo, k+1)
	case op == JmpJgt:
		f.hi = min(f.hi, k)
	case op == JmpJge && taken:
		f.lo = max(f.lo, k)
	case op == JmpJge:
		if k == 0 {
			return nothing
		}
		f.hi = min(f.hi, k-1)
	case op == JmpJset && taken:
		candidates := k &^ f.zeros
		if candidates == 0 {
			return nothing
		}
		if candidates&(candidates-1) == 0 {
			f.ones |= candidates
		}
	case op == JmpJset:
		f.zeros |= k
	}
	return f.tighten()
}

// state is what the analysis knows on entry to an instruction.
type state struct {
	reached bool
	// src is the index of the word of seccomp_data that A holds, or -1.
	src int
	// a is what A holds when src is -1; otherwise words[src] is.
	a     fact
	words [SeccompDataSize / 4]fact
}

// acc is what is known about A.
func (s *state) acc() fact {
	if s.src >= 0 {
		return s.words[s.src]
	}
	return s.a
}

// setAcc records what is known about A. When A holds a word of
// seccomp_data, that is known about the word too, for as long as the
// program runs, since the input never changes.
func (s *state) setAcc(f fact) {
	if s.src >= 0 {
		s.words[s.src] = f
	} else {
		s.a = f
	}
}

// load makes A something other than a word of seccomp_data.
func (s *state) load(f fact) {
	s.src, s.a = -1, f
}

// merge adds the paths of t to those of s.
func (s *state) merge(t *state) {
	if !s.reached {
		*s = *t
		return
	}
	a := s.acc().join(t.acc())
	if s.src != t.src {
		s.src = -1
	}
	for i := range s.words {
		s.words[i] = s.words[i].join(t.words[i])
	}
	s.setAcc(a)
}

// outcome is what a conditional jump does on every path that reaches it.
type outcome uint8

const (
	varies outcome = iota
	alwaysTrue
	alwaysFalse
)

// analysis is what the paths of a program reveal: which instructions load
// what A already holds, and which conditional jumps always go one way.
type analysis struct {
	redundant []bool
	outcomes  []outcome
}

// analyze follows every path of a valid program at once. Jumps only go
// forward, so one pass in program order sees every predecessor of an
// instruction before the instruction itself.
func analyze(prog []Instruction) analysis {
	res := analysis{redundant: make([]bool, len(prog)), outcomes: make([]outcome, len(prog))}
	states := make([]state, len(prog))
	states[0] = state{reached: true, src: -1, a: exactly(0)}
	for i := range states[0].words {
		states[0].words[i] = anything
	}
	for pc, ins := range prog {
		s := states[pc]
		if !s.reached {
			continue
		}
		switch {
		case ins.Op == opLdAbsW:
			res.redundant[pc] = s.src == int(ins.K/4)
			s.src = int(ins.K / 4)
		case ins.Op == opLdImm:
			res.redundant[pc] = s.acc() == exactly(ins.K)
			s.load(exactly(ins.K))
		case ins.Op == opLdLen:
			s.load(exactly(SeccompDataSize))
		case ins.Op == ClassAlu|AluAnd|SrcK:
			s.load(s.acc().and(ins.K))
		case ins.Class() == ClassAlu || ins.Op == opLdMem || ins.Op == opTxa:
			s.load(anything)
		case ins.IsReturn():
			continue
		case ins.Op == opJa:
			states[pc+1+int(ins.K)].merge(&s)
			continue
		case ins.IsConditionalJump():
			res.outcomes[pc] = branch(states, pc, ins, &s)
			continue
		}
		states[pc+1].merge(&s)
	}
	return res
}

// branch hands s to the sides of the conditional jump at pc that can be
// taken, each with what taking it reveals about A.
func branch(states []state, pc int, ins Instruction, s *state) outcome {
	jt, jf := pc+1+int(ins.Jt), pc+1+int(ins.Jf)
	if ins.Op&SrcX != 0 {
		states[jt].merge(s)
		states[jf].merge(s)
		return varies
	}
	t, f := *s, *s
	t.setAcc(s.acc().refine(ins.operation(), ins.K, true))
	f.setAcc(s.acc().refine(ins.operation(), ins.K, false))
	switch {
	case t.acc().empty():
		states[jf].merge(&f)
		return alwaysFalse
	case f.acc().empty():
		states[jt].merge(&t)
		return alwaysTrue
	}
	states[jt].merge(&t)
	states[jf].merge(&f)
	return varies
}
