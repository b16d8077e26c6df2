package x86

import (
	"math"

	"golang.org/x/arch/x86/x86asm"
)

// step applies the effect of one instruction, at address pc, on the
// registers and the frame. Calls, syscall instructions and control flow
// are the caller's business.
func (s *state) step(in *op, pc uint64) {
	next := pc + uint64(in.Len)
	framed := s.regs[rsp].Kind == Stack
	s.setFlags(in, next)
	s.writeMemory(in, next)
	s.stepRegs(in, next)
	if framed && s.regs[rsp].Kind != Stack && !(dynamicAlloc(in) && s.regs[rbp].Kind == Stack) {
		// The frame is lost (a stack realigned with and): forget it.
		s.forget(math.MinInt64)
	}
}

// dynamicAlloc says whether an instruction moves the stack pointer down
// by a register's amount: alloca, or a variable-length array, in a
// function with a frame pointer. The words of the frame above stay
// where they were, and code reaches them through the frame pointer;
// what it addresses from the stack pointer is the new space, or its
// calls' arguments, below them.
func dynamicAlloc(in *op) bool {
	_, _, isReg := regArg(in.Args[1])
	return in.Op == x86asm.SUB && in.Args[0] == x86asm.RSP && isReg
}

// stepRegs applies an instruction's effect on the registers.
func (s *state) stepRegs(in *op, next uint64) {
	dst, bits, isReg := regArg(in.Args[0])
	switch in.Op {
	case x86asm.MOV:
		if isReg {
			if s.tableEntry(in.Args[1], 8) && bits == 64 {
				s.regs[dst] = s.tableRead(in.Args[1], 8)
				return
			}
			s.set(dst, bits, s.operand(in.Args[1], next, in.MemBytes))
		}
		return
	case x86asm.MOVSXD:
		if isReg && s.tableEntry(in.Args[1], 4) {
			s.regs[dst] = s.tableRead(in.Args[1], 4)
			return
		}
		if isReg && bits == 64 {
			src := s.operand(in.Args[1], next, in.MemBytes)
			s.set(dst, 64, src.mapConsts(func(c uint64) uint64 { return uint64(int64(int32(c))) }))
			return
		}
	case x86asm.LEA:
		if isReg {
			if m, ok := in.Args[1].(x86asm.Mem); ok && bits == 64 && s.tableIndex(m) {
				base, _, _ := gpr(m.Base)
				index, _, _ := gpr(m.Index)
				s.regs[dst] = tablePlus(s.regs[base], s.regs[index])
				return
			}
			s.set(dst, bits, s.address(in.Args[1], next))
		}
		return
	case x86asm.PUSH:
		s.push(s.operand(in.Args[0], next, 8))
		return
	case x86asm.POP:
		v := s.pop()
		if isReg {
			s.set(dst, bits, v)
		}
		return
	case x86asm.ROR:
		if imm, ok := in.Args[1].(x86asm.Imm); ok && isReg && bits == 64 && imm == 0x11 {
			s.regs[dst] = Value{Kind: Rotated}
			return
		}
	case x86asm.XOR, x86asm.SUB:
		if isReg && bits == 64 && in.Op == x86asm.XOR && pointerGuard(in.Args[1]) {
			if s.regs[dst].Kind == Rotated {
				s.regs[dst] = Value{Kind: Demangled}
			} else {
				s.regs[dst] = Value{}
			}
			return
		}
		if src, _, ok := regArg(in.Args[1]); ok && isReg && src == dst {
			s.set(dst, bits, ConstOf(0))
			return
		}
		if imm, ok := in.Args[1].(x86asm.Imm); ok && isReg {
			if in.Op == x86asm.XOR {
				s.set(dst, bits, s.regs[dst].mapConsts(func(c uint64) uint64 { return c ^ uint64(imm) }))
			} else {
				s.set(dst, bits, s.regs[dst].add(-int64(imm)))
			}
			return
		}
	case x86asm.ADD, x86asm.OR, x86asm.AND:
		if src, _, ok := regArg(in.Args[1]); ok && isReg && in.Op == x86asm.ADD && s.tableSum(dst, src) {
			s.regs[dst] = tablePlus(s.regs[dst], s.regs[src])
			return
		}
		if v, ok := s.foundSum(in, dst, bits, isReg, next); ok {
			s.regs[dst] = v
			return
		}
		if imm, ok := in.Args[1].(x86asm.Imm); ok && isReg {
			switch in.Op {
			case x86asm.ADD:
				s.set(dst, bits, s.regs[dst].add(int64(imm)))
			default:
				s.set(dst, bits, s.regs[dst].masked(uint64(imm), in.Op == x86asm.OR))
			}
			return
		}
	case x86asm.SBB:
		// sbb %r,%r is 0 or -1, by the carry: a branch-free choice.
		if src, _, ok := regArg(in.Args[1]); ok && isReg && src == dst {
			s.set(dst, bits, Value{Kind: Const, Consts: []uint64{0, ^uint64(0)}})
			return
		}
	case x86asm.NEG, x86asm.NOT:
		if isReg {
			f := func(c uint64) uint64 { return -c }
			if in.Op == x86asm.NOT {
				f = func(c uint64) uint64 { return ^c }
			}
			s.set(dst, bits, s.regs[dst].mapConsts(f))
			return
		}
	case x86asm.SHL, x86asm.SHR, x86asm.SAR:
		if imm, ok := in.Args[1].(x86asm.Imm); ok && isReg {
			n := uint64(imm) & 63
			f := map[x86asm.Op]func(uint64) uint64{
				x86asm.SHL: func(c uint64) uint64 { return c << n },
				x86asm.SHR: func(c uint64) uint64 { return c >> n },
				x86asm.SAR: func(c uint64) uint64 { return uint64(int64(c) >> n) },
			}[in.Op]
			if bits == 32 {
				v := s.regs[dst].truncate32()
				if in.Op == x86asm.SAR {
					v = v.mapConsts(func(c uint64) uint64 { return uint64(int64(int32(c))) })
				}
				s.set(dst, 32, v.mapConsts(f))
				return
			}
			s.set(dst, bits, s.regs[dst].mapConsts(f))
			return
		}
	case x86asm.MOVZX:
		if src, sbits, ok := regArg(in.Args[1]); ok && isReg {
			mask := uint64(1)<<sbits - 1
			s.set(dst, max(bits, 32), s.regs[src].mapConsts(func(c uint64) uint64 { return c & mask }))
			return
		}
	case x86asm.INC, x86asm.DEC:
		if isReg {
			d := int64(1)
			if in.Op == x86asm.DEC {
				d = -1
			}
			s.set(dst, bits, s.regs[dst].add(d))
			return
		}
	case x86asm.XCHG:
		a, abits, aok := regArg(in.Args[0])
		b, bbits, bok := regArg(in.Args[1])
		if aok && bok && abits == bbits && abits >= 32 {
			va, vb := s.regs[a], s.regs[b]
			s.set(a, abits, vb)
			s.set(b, bbits, va)
			return
		}
	}
	if isSetcc(in.Op) && isReg && bits == 8 && s.regs[dst].Equal(ConstOf(0)) {
		// A flag into a register cleared before: 0 or 1.
		s.regs[dst] = Value{Kind: Const, Consts: []uint64{0, 1}}
		return
	}
	if isCmov(in.Op) && isReg {
		s.set(dst, bits, s.regs[dst].Join(s.operand(in.Args[1], next, in.MemBytes)))
		return
	}
	s.clobber(in)
}

// pointerGuard says whether an operand is the thread's pointer guard,
// %fs:0x30, which glibc's PTR_MANGLE and PTR_DEMANGLE xor pointers with.
func pointerGuard(a x86asm.Arg) bool {
	m, ok := a.(x86asm.Mem)
	return ok && m.Segment == x86asm.FS && m.Base == 0 && m.Index == 0 && m.Disp == 0x30
}

// add is v plus d: constants and frame addresses move, anything else is
// unknown.
func (v Value) add(d int64) Value {
	if v.Kind == Stack {
		return StackOf(v.Offset() + d)
	}
	return v.mapConsts(func(c uint64) uint64 { return c + uint64(d) })
}

// foundSum is what an add of a register or a word to another gives
// where one of them was made from a call's result: an address made from
// it (the loader's base of an object plus a symbol's value).
func (s *state) foundSum(in *op, dst, bits int, isReg bool, next uint64) (Value, bool) {
	if in.Op != x86asm.ADD || !isReg || bits != 64 {
		return Value{}, false
	}
	if _, imm := in.Args[1].(x86asm.Imm); imm {
		return Value{}, false
	}
	a, aok := s.regs[dst].Origin()
	b, bok := s.operand(in.Args[1], next, 8).Origin()
	switch {
	case aok && bok && a != b:
		return Value{}, false
	case aok:
		return FoundOf(a), true
	case bok:
		return FoundOf(b), true
	}
	return Value{}, false
}

// push stores v below the stack pointer and moves it down.
func (s *state) push(v Value) {
	s.regs[rsp] = s.regs[rsp].add(-8)
	if sp := s.regs[rsp]; sp.Kind == Stack {
		s.store(sp.Offset(), 8, v)
	}
}

// pop reads the word at the stack pointer and moves it up.
func (s *state) pop() Value {
	sp := s.regs[rsp]
	var v Value
	if sp.Kind == Stack {
		v, _ = s.slot(sp.Offset(), 8)
	}
	s.regs[rsp] = sp.add(8)
	return v
}

// writeMemory applies what an instruction writes to memory to the
// frame: a store through a frame address sets or forgets the words it
// covers; a store through any other pointer forgets the frame once its
// address has been given away; and storing a frame address gives it
// away.
func (s *state) writeMemory(in *op, next uint64) {
	m, ok := in.Args[0].(x86asm.Mem)
	switch {
	case isString(in.Op):
		s.forget(math.MinInt64)
		return
	case !ok || readsOnly[in.Op] || in.Op == x86asm.LEA:
		return
	}
	s.escape(s.operand(in.Args[1], next, in.MemBytes))
	off, inFrame := s.frameOffset(m)
	size := int64(in.MemBytes)
	switch {
	case inFrame && in.Op == x86asm.MOV && (size == 4 || size == 8):
		v := s.operand(in.Args[1], next, in.MemBytes)
		if size == 4 {
			v = v.truncate32()
		}
		s.store(off, size, v)
	case inFrame && (in.Op == x86asm.AND || in.Op == x86asm.OR) && (size == 4 || size == 8):
		old, _ := s.slot(off, size)
		v := Value{}
		if imm, ok := in.Args[1].(x86asm.Imm); ok {
			v = old.masked(uint64(imm), in.Op == x86asm.OR)
		}
		if size == 4 {
			v = v.truncate32()
		}
		s.store(off, size, v)
	case inFrame:
		if size == 0 {
			size = maxField
		}
		s.store(off, size, Value{})
	default:
		s.forget(s.escaped)
	}
}

// frameOffset is the offset in the frame a memory operand addresses, if
// it is a frame address.
func (s *state) frameOffset(m x86asm.Mem) (int64, bool) {
	base, bits, ok := gpr(m.Base)
	if !ok || bits != 64 || m.Index != 0 || m.Segment != 0 || s.regs[base].Kind != Stack {
		return 0, false
	}
	return s.regs[base].Offset() + m.Disp, true
}

// isString says whether op is a string instruction, which writes where
// rdi points.
func isString(op x86asm.Op) bool {
	switch op {
	case x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ,
		x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ:
		return true
	}
	return false
}

// tableJump says whether an indirect jump may stay in its function,
// through a jump table: its target was computed from one, or nothing is
// known of it. A target read from memory or given by the caller is a
// function's: the jump is a tail call.
func (s *state) tableJump(in *op) bool {
	switch a := in.Args[0].(type) {
	case x86asm.Reg:
		r, _, _ := gpr(a)
		k := s.regs[r].Kind
		return k == Table || opaque(k)
	case x86asm.Mem:
		return s.tableEntry(a, 8)
	}
	return false
}

// tableEntry says whether a memory operand reads an entry of size bytes
// of a table at a constant address: indexed, from a RIP-relative or
// absolute base or a register that holds a constant.
func (s *state) tableEntry(a x86asm.Arg, size uint8) bool {
	m, ok := a.(x86asm.Mem)
	if !ok || m.Index == 0 || m.Scale != size || m.Segment != 0 {
		return false
	}
	if m.Base == 0 {
		return true
	}
	base, bits, ok := gpr(m.Base)
	return ok && bits == 64 && s.regs[base].Kind == Const
}

// tableRead is an entry of size bytes read through a memory operand
// tableEntry accepts: where the table's address is a constant, it keeps
// it, and an absolute entry is its target.
func (s *state) tableRead(a x86asm.Arg, size int) Value {
	m := a.(x86asm.Mem)
	table := uint64(m.Disp)
	if m.Base != 0 {
		base, _, _ := gpr(m.Base)
		b := s.regs[base]
		if len(b.Consts) != 1 {
			return Value{Kind: Table}
		}
		table += b.Consts[0]
	}
	return Value{Kind: Table, Consts: []uint64{table, uint64(size), 0}}
}

// tablePlus is the sum of two values tableSum accepts: a relative
// entry read from a known table plus a constant is a target the table
// tells; any other sum is a target the analysis cannot read.
func tablePlus(a, b Value) Value {
	if a.Kind == Const {
		a, b = b, a
	}
	if a.Kind == Table && len(a.Consts) == 3 && a.Consts[1] == 4 && a.Consts[2] == 0 && b.Kind == Const && len(b.Consts) == 1 {
		return Value{Kind: Table, Consts: []uint64{a.Consts[0], 4, b.Consts[0]}}
	}
	return Value{Kind: Table}
}

// tableSum says whether adding src to dst gives a jump table's target:
// one is a constant (the table's or the code's base), the other an
// entry read from a table or an offset the analysis does not know, as
// hand-written assembly computes a place in its own code.
func (s *state) tableSum(dst, src int) bool {
	a, b := s.regs[dst].Kind, s.regs[src].Kind
	return (a == Const && (b == Table || opaque(b))) || (b == Const && (a == Table || opaque(a)))
}

// opaque says whether a Kind tells nothing of where a value points: an
// Unknown, or a parameter's bits (a flag, an index).
func opaque(k Kind) bool { return k == Unknown || k == Bits }

// tableIndex says whether an address adds a constant base and an index
// (lea (%base,%index), %reg): a jump table's target.
func (s *state) tableIndex(m x86asm.Mem) bool {
	base, bb, ok1 := gpr(m.Base)
	index, ib, ok2 := gpr(m.Index)
	if !ok1 || !ok2 || bb != 64 || ib != 64 || m.Scale != 1 {
		return false
	}
	return s.tableSum(base, index)
}

// set writes v to register r through a bits-wide part of it. A 32-bit
// write clears the upper half, as the processor does; a narrower one
// leaves bits the analysis does not follow.
func (s *state) set(r, bits int, v Value) {
	switch bits {
	case 64:
		s.regs[r] = v
	case 32:
		s.regs[r] = v.truncate32()
	default:
		s.regs[r] = Value{}
	}
}

// truncate32 is the value of the low 32 bits of v, zero-extended.
func (v Value) truncate32() Value {
	switch v.Kind {
	case Const:
		return v.mapConsts(func(c uint64) uint64 { return c & 0xffffffff })
	case Param, Field:
		// A parameter passed in 32 bits is the same parameter: the
		// callee reads the width it was declared with; a 32-bit field
		// is read as such.
		return v
	case Bits:
		return v.mask(0xffffffff, 0)
	}
	return Value{}
}

// operand is the value a source operand reads: an immediate, a
// register, a RIP-relative word (a Slot), a word of the frame, or a
// field of a parameter or of what a Slot points to; any other memory is
// Unknown.
func (s *state) operand(a x86asm.Arg, next uint64, memBytes int) Value {
	switch a := a.(type) {
	case x86asm.Imm:
		return ConstOf(uint64(a))
	case x86asm.Reg:
		r, bits, ok := gpr(a)
		if !ok {
			return Value{}
		}
		switch bits {
		case 64:
			return s.regs[r]
		case 32:
			return s.regs[r].truncate32()
		}
	case x86asm.Mem:
		return s.load(a, next, memBytes)
	}
	return Value{}
}

// load is the value a memory operand of size bytes reads.
func (s *state) load(m x86asm.Mem, next uint64, size int) Value {
	if addr, ok := ripTarget(m, next); ok {
		if size == 8 {
			return SlotOf(addr)
		}
		return Value{}
	}
	if size != 4 && size != 8 {
		return Value{}
	}
	if off, ok := s.frameOffset(m); ok {
		v, _ := s.slot(off, int64(size))
		return v
	}
	base, bits, ok := gpr(m.Base)
	if !ok || bits != 64 || m.Index != 0 || m.Segment != 0 {
		return Value{}
	}
	switch b := s.regs[base]; {
	case b.Kind == Ret || b.Kind == Out:
		return Value{Kind: Loaded, Consts: []uint64{next, b.Consts[0]}}
	case opaque(b.Kind):
		return Value{Kind: Loaded, Consts: []uint64{next}}
	case b.Kind == Const && len(b.Consts) == 1 && size == 8:
		// A word of a structure at a constant address.
		return SlotOf(b.Consts[0] + uint64(m.Disp))
	default:
		return FieldOf(b, m.Disp)
	}
}

// address is the value of an effective address: a RIP-relative address
// is a constant, a constant register or a frame address plus a
// displacement another one.
func (s *state) address(a x86asm.Arg, next uint64) Value {
	m, ok := a.(x86asm.Mem)
	if !ok || m.Segment != 0 {
		return Value{}
	}
	if addr, ok := ripTarget(m, next); ok {
		return ConstOf(addr)
	}
	base, bits, ok := gpr(m.Base)
	if !ok || bits != 64 || m.Index != 0 {
		return Value{}
	}
	return s.regs[base].add(m.Disp)
}

// ripTarget is the address of a RIP-relative memory operand.
func ripTarget(m x86asm.Mem, next uint64) (uint64, bool) {
	if m.Base != x86asm.RIP || m.Index != 0 || m.Segment != 0 {
		return 0, false
	}
	return next + uint64(m.Disp), true
}

// regArg is the general-purpose register an argument names.
func regArg(a x86asm.Arg) (r, bits int, ok bool) {
	reg, isReg := a.(x86asm.Reg)
	if !isReg {
		return 0, 0, false
	}
	return gpr(reg)
}

// clobber makes Unknown every register an instruction the analysis does
// not follow may write: its explicit register operands, unless the
// instruction only reads them, and the registers it writes implicitly.
func (s *state) clobber(in *op) {
	if !readsOnly[in.Op] {
		for i, a := range in.Args {
			if a == nil {
				break
			}
			if r, _, ok := regArg(a); ok && (i == 0 || writesSecond[in.Op]) {
				s.regs[r] = Value{}
			}
		}
	}
	for _, r := range implicitWrites(in) {
		s.regs[r] = Value{}
	}
}

// call applies the effect of the call at addr: the registers it may
// change are unknown but for rax, what it returned, and so is the frame
// if the callee was given an address in it or one has been given away
// before.
func (s *state) call(addr uint64) {
	for _, r := range callerSaved {
		s.escape(s.regs[r])
	}
	for _, r := range callerSaved {
		s.regs[r] = Value{}
	}
	s.regs[rax] = Value{Kind: Ret, Consts: []uint64{addr}}
	s.forget(s.escaped)
	s.cond = Guard{}
}
