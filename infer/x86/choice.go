package x86

import (
	"golang.org/x/arch/x86/x86asm"
)

// Choice is one value a function may return, with what its path to the
// ret found null: an IFUNC resolver's pick and the condition it is
// picked on. glibc's resolver of time returns its system-call fallback
// only on the paths where the vDSO's map, or what the lookup of
// __vdso_time gave, is null; the fixed-point analysis joins those paths
// with the others at the shared ret and cannot tell them apart.
type Choice struct {
	Result Value
	// Null are the 64-bit values the path tested and found zero: what a
	// call returned (Ret), wrote where it was given (Out), or an address
	// made from that (Found), and words globals name (Slot, Field).
	Null []Value
}

// Limits of Choices: it follows every path apart, which only small
// functions without loops afford, as resolvers are.
const (
	maxChoicePaths = 64
	maxPathLength  = 512
)

// Choices follows every path of the function entered at addr apart,
// with no join, and lists what each returns. It says false where it
// cannot: a loop or a path too long, too many paths, a jump it cannot
// follow, a tail call, or bytes that decode to nothing.
func (c *Code) Choices(addr uint64, env *Env) ([]Choice, bool) {
	i, ok := c.g.index(addr)
	if !ok {
		return nil, false
	}
	w := walker{g: c.g, env: env}
	if !w.walk(i, entryState(), nil, 0) || len(w.out) == 0 {
		return nil, false
	}
	return w.out, true
}

// walker follows the paths of one function.
type walker struct {
	g   *graph
	env *Env
	out []Choice
	// paths counts the paths begun, to give up on too many.
	paths int
}

// walk follows the path from instruction i with state s, which has
// found null the values of null so far; steps counts the instructions
// of the path before i.
func (w *walker) walk(i int, s state, null []Value, steps int) bool {
	w.paths++
	if w.paths > maxChoicePaths {
		return false
	}
	// zero is the value the flags say is zero when ZF is set.
	zero := Value{}
	for ; i < len(w.g.insts); steps++ {
		if steps > maxPathLength {
			return false
		}
		in := &w.g.insts[i]
		switch {
		case in.bad:
			return false
		case in.Op == x86asm.RET:
			w.out = append(w.out, Choice{Result: s.regs[rax], Null: null})
			return true
		case isJcc(in.Op):
			return w.branch(i, s, null, zero, steps)
		case in.Op == x86asm.JMP:
			t, ok := in.branchTarget()
			if !ok || !w.g.inside(t) {
				return false
			}
			if i, ok = w.g.index(t); !ok {
				return false
			}
			continue
		case in.ends():
			return false
		case in.Op == x86asm.CALL:
			if t, ok := in.branchTarget(); ok && w.env.NoReturn != nil && w.env.NoReturn(t) {
				// The path ends: it picks nothing.
				return true
			}
			s.callOut(in.addr)
			zero = Value{}
		default:
			zero = s.stepZero(&in.op, in.addr, zero)
		}
		i++
	}
	return false
}

// stepZero applies one instruction to s and says what the flags then
// find zero: zero still, if the instruction leaves the flags alone.
func (s *state) stepZero(in *op, pc uint64, zero Value) Value {
	if !writesFlags(in.Op) {
		s.step(in, pc)
		return zero
	}
	zero = s.zeroTested(in)
	s.step(in, pc)
	if zero.Kind == Unknown {
		zero = s.zeroResult(in)
	}
	return zero
}

// branch follows both ways of the conditional branch at instruction i.
// A je taken, or a jne not, finds zero the value the flags tested.
func (w *walker) branch(i int, s state, null []Value, zero Value, steps int) bool {
	in := &w.g.insts[i]
	t, ok := in.branchTarget()
	if !ok || !w.g.inside(t) || countsRCX(in.Op) {
		return false
	}
	target, ok := w.g.index(t)
	if !ok {
		return false
	}
	withZero := null
	if zero.Kind != Unknown {
		withZero = append(append([]Value(nil), null...), zero)
	}
	taken, fall := null, null
	switch in.Op {
	case x86asm.JE:
		taken = withZero
	case x86asm.JNE:
		fall = withZero
	}
	return w.walk(target, s.clone(), taken, steps) && w.walk(i+1, s.clone(), fall, steps)
}

// countsRCX says whether a conditional branch tests or counts down rcx
// rather than only reading the flags.
func countsRCX(op x86asm.Op) bool {
	switch op {
	case x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}

// clone is a copy of s whose frame words can change apart.
func (s state) clone() state {
	s.slots = append([]slot(nil), s.slots...)
	return s
}

// callOut applies a call's effect, and makes each frame word the callee
// is given the address of what the call wrote there (Out): a lookup's
// answer, as glibc's _dl_lookup_symbol_x writes the symbol it found.
func (s *state) callOut(addr uint64) {
	var given []int64
	for _, r := range args {
		if v := s.regs[r]; v.Kind == Stack {
			given = append(given, v.Offset())
		}
	}
	s.call(addr)
	for _, off := range given {
		s.store(off, 8, Value{Kind: Out, Consts: []uint64{addr}})
	}
}

// zeroTested is the value an instruction that only sets the flags finds
// zero when it sets ZF, before it runs: a 64-bit register tested
// against itself, or compared with 0.
func (s *state) zeroTested(in *op) Value {
	a, abits, aok := regArg(in.Args[0])
	if !aok || abits != 64 {
		return Value{}
	}
	switch in.Op {
	case x86asm.TEST:
		if b, _, ok := regArg(in.Args[1]); ok && a == b {
			return s.regs[a]
		}
	case x86asm.CMP:
		if imm, ok := in.Args[1].(x86asm.Imm); ok && imm == 0 {
			return s.regs[a]
		}
	}
	return Value{}
}

// zeroResult is the value an arithmetic instruction leaves in its 64-bit
// register destination, which is zero when it sets ZF.
func (s *state) zeroResult(in *op) Value {
	switch in.Op {
	case x86asm.ADD, x86asm.SUB, x86asm.AND, x86asm.OR, x86asm.XOR:
		if r, bits, ok := regArg(in.Args[0]); ok && bits == 64 {
			return s.regs[r]
		}
	}
	return Value{}
}
