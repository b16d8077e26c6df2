package x86

import (
	"fmt"

	"golang.org/x/arch/x86/x86asm"
)

// Guard is a condition on what a function's caller passed: some bit of
// Mask is set in argument register Arg (0 to 5: rdi, rsi, rdx, rcx, r8,
// r9) at entry. A call or a syscall instruction with a Guard is reached
// only when it holds, as glibc's glob reads the home directory only
// with GLOB_TILDE. The zero Guard (Mask 0) is no condition.
type Guard struct {
	Arg  uint8
	Mask uint64
}

func (g Guard) String() string { return fmt.Sprintf("%s&%#x", argNames[g.Arg], g.Mask) }

// Through is what g, a condition on a callee's argument, is in its
// caller when the argument is v: a Guard of the caller's own argument
// (ok), or none, when v says nothing of them or sets one of g's bits;
// never says g cannot hold (v clears every bit of it).
func (g Guard) Through(v Value) (h Guard, ok, never bool) {
	switch v.Kind {
	case Param:
		return Guard{v.Arg, g.Mask}, true, false
	case Bits:
		keep, set, unknown := v.bits()
		switch {
		case (set|unknown)&g.Mask != 0:
			return Guard{}, false, false
		case keep&g.Mask == 0:
			return Guard{}, false, true
		}
		return Guard{v.Arg, keep & g.Mask}, true, false
	case Const:
		for _, c := range v.Consts {
			if c&g.Mask != 0 {
				return Guard{}, false, false
			}
		}
		return Guard{}, false, true
	}
	return Guard{}, false, false
}

// bits are what a Param or a Bits says of each bit: the parameter's
// (keep), set, or either (unknown); every other bit is clear.
func (v Value) bits() (keep, set, unknown uint64) {
	if v.Kind == Param {
		return ^uint64(0), 0, 0
	}
	return v.Consts[0], v.Consts[1], v.Consts[2]
}

// bitsOf is the Value of a parameter's bits: a Param if they are all
// its own.
func bitsOf(arg uint8, keep, set, unknown uint64) Value {
	keep &^= set | unknown
	unknown &^= set
	if keep == ^uint64(0) {
		return ParamOf(int(arg))
	}
	return Value{Kind: Bits, Arg: arg, Consts: []uint64{keep, set, unknown}}
}

// mask is (v & and) | or, for a parameter's bits; Unknown for any
// other v.
func (v Value) mask(and, or uint64) Value {
	if v.Kind != Param && v.Kind != Bits {
		return Value{}
	}
	keep, set, unknown := v.bits()
	return bitsOf(v.Arg, keep&and&^or, set&and|or, unknown&and&^or)
}

// joinBits is the least Bits covering two values of one parameter's
// bits: a bit both keep is kept, one both set is set, one both clear
// is clear, and any other is unknown.
func joinBits(v, w Value) Value {
	k1, s1, u1 := v.bits()
	k2, s2, u2 := w.bits()
	clear := ^(k1 | s1 | u1) & ^(k2 | s2 | u2)
	keep, set := k1&k2, s1&s2
	return bitsOf(v.Arg, keep, set, ^(keep | set | clear))
}

// masked is what and-ing (or or-ing, with or) an immediate into v
// gives: constants change, a parameter's bits are followed.
func (v Value) masked(imm uint64, or bool) Value {
	switch {
	case v.Kind == Const && or:
		return v.mapConsts(func(c uint64) uint64 { return c | imm })
	case v.Kind == Const:
		return v.mapConsts(func(c uint64) uint64 { return c & imm })
	case or:
		return v.mask(^uint64(0), imm)
	}
	return v.mask(imm, 0)
}

// tested is the Guard that holds when v & mask is not zero: none when
// v is no parameter's bits, or when that says nothing of the parameter
// (a bit v sets is always there, one it may have on its own may be).
func (v Value) tested(mask uint64) Guard {
	if v.Kind != Param && v.Kind != Bits {
		return Guard{}
	}
	keep, set, unknown := v.bits()
	if (set|unknown)&mask != 0 {
		return Guard{}
	}
	return Guard{v.Arg, keep & mask}
}

// maxGuards bounds the guards a state keeps: beyond, the newest is
// dropped, which only loses precision.
const maxGuards = 4

// guards are the Guards known to hold at a point: on every path to it.
type guards struct {
	g [maxGuards]Guard
	n uint8
}

// innermost is the guard added last, the zero Guard if none.
func (gs *guards) innermost() Guard {
	if gs.n == 0 {
		return Guard{}
	}
	return gs.g[gs.n-1]
}

// add notes that g holds.
func (gs *guards) add(g Guard) {
	if g.Mask == 0 || gs.n == maxGuards || gs.has(g) {
		return
	}
	gs.g[gs.n] = g
	gs.n++
}

func (gs *guards) has(g Guard) bool {
	for _, h := range gs.g[:gs.n] {
		if h == g {
			return true
		}
	}
	return false
}

// meet keeps the guards o holds too and says whether gs changed.
func (gs *guards) meet(o *guards) bool {
	var out guards
	for _, g := range gs.g[:gs.n] {
		if o.has(g) {
			out.g[out.n] = g
			out.n++
		}
	}
	changed := out != *gs
	*gs = out
	return changed
}

// setFlags notes what the flags an instruction sets say of a parameter:
// a test or an and of a parameter's bits with an immediate sets ZF
// exactly when none of them is set. Any other instruction that may
// write the flags forgets it, a test of a register with itself too: a
// pointer's null check, which guards most of libc's functions, made the
// solver a third slower and pruned no call of the four servers.
func (s *state) setFlags(in *op, next uint64) {
	if !writesFlags(in.Op) {
		return
	}
	s.cond = Guard{}
	if in.Op != x86asm.TEST && in.Op != x86asm.AND {
		return
	}
	if imm, ok := in.Args[1].(x86asm.Imm); ok {
		s.cond = s.flagOperand(in.Args[0], next, in.MemBytes).tested(uint64(imm))
	}
}

// flagOperand is the value an instruction tests; a byte or a half-word
// of a frame word it knows is that word's lowest bits.
func (s *state) flagOperand(a x86asm.Arg, next uint64, memBytes int) Value {
	m, ok := a.(x86asm.Mem)
	if !ok || memBytes >= 4 {
		return s.operand(a, next, memBytes)
	}
	off, inFrame := s.frameOffset(m)
	if !inFrame {
		return Value{}
	}
	for _, size := range []int64{4, 8} {
		if v, ok := s.slot(off, size); ok {
			return v.masked(1<<(8*memBytes)-1, false)
		}
	}
	return Value{}
}

// writesFlags says whether an instruction may change the flags: all
// but moves, address computations, stack moves and control flow.
func writesFlags(op x86asm.Op) bool {
	switch op {
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.PUSH, x86asm.POP,
		x86asm.NOP, x86asm.JMP:
		return false
	}
	return !isJcc(op) && !isCmov(op) && !isSetcc(op)
}

// edgeGuard is the Guard that holds on the edge from a block ending in
// in to the instruction at to, given the flags' condition: a jne is
// taken, and a je falls through, when the bits tested are not all zero.
func edgeGuard(in *inst, cond Guard, to uint64) Guard {
	if cond.Mask == 0 || in.bad {
		return Guard{}
	}
	t, ok := in.branchTarget()
	if !ok || t == in.next() {
		return Guard{}
	}
	switch {
	case in.Op == x86asm.JNE && to == t, in.Op == x86asm.JE && to == in.next():
		return cond
	}
	return Guard{}
}
