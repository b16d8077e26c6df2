package x86

import (
	"math"
	"slices"
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// The general-purpose registers, numbered as in the instruction encoding.
const (
	rax = iota
	rcx
	rdx
	rbx
	rsp
	rbp
	rsi
	rdi
	r8
	r9
	r10
	r11
	numRegs = 16
)

// args are the argument registers of the System V ABI, in order.
var args = [6]int{rdi, rsi, rdx, rcx, r8, r9}

// callerSaved are the registers a call may change.
var callerSaved = []int{rax, rcx, rdx, rsi, rdi, r8, r9, r10, r11}

// gpr returns the number of the 64-bit register that r is part of, and
// its width in bits; ok is false for a register that is not a
// general-purpose one.
func gpr(r x86asm.Reg) (n, bits int, ok bool) {
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		return int(r - x86asm.RAX), 64, true
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return int(r - x86asm.EAX), 32, true
	case r >= x86asm.AX && r <= x86asm.R15W:
		return int(r - x86asm.AX), 16, true
	case r >= x86asm.AL && r <= x86asm.BL:
		return int(r - x86asm.AL), 8, true
	case r >= x86asm.AH && r <= x86asm.BH:
		// The high bytes of rax, rcx, rdx and rbx.
		return int(r - x86asm.AH), 8, true
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return int(r-x86asm.SPB) + rsp, 8, true
	}
	return 0, 0, false
}

// slot is what a word of the frame holds: size bytes at off from the
// stack pointer at entry.
type slot struct {
	off  int64
	size int64
	v    Value
}

// state is what is known of every register, and of the words of the
// frame stored to, at one point.
type state struct {
	regs [numRegs]Value
	// slots are sorted by offset and do not overlap. They are shared
	// between copies of a state: change them only through setSlots.
	slots []slot
	// escaped is the lowest address in the frame that has been given
	// away (noEscape if none): a write through any pointer, or a call,
	// may change the words from there up (a callee given a structure
	// may write all of it, and nothing below it).
	escaped int64
	// cond is what the flags say of a parameter: the Guard that holds
	// when ZF is clear (setFlags).
	cond Guard
	// guards hold on every path to this point.
	guards guards
}

// noEscape is the escaped of a frame no address of which was given
// away.
const noEscape = math.MaxInt64

// entryState is the state at a function's entry: its arguments are
// parameters, the stack pointer is the frame's origin, everything else
// is unknown.
func entryState() state {
	var s state
	for i, r := range args {
		s.regs[r] = ParamOf(i)
	}
	s.regs[rsp] = StackOf(0)
	s.escaped = noEscape
	return s
}

// join merges o into s and says whether s changed. A slot survives if
// both hold it.
func (s *state) join(o *state) bool {
	changed := false
	for i := range s.regs {
		j := s.regs[i].Join(o.regs[i])
		if !j.Equal(s.regs[i]) {
			s.regs[i] = j
			changed = true
		}
	}
	if o.escaped < s.escaped {
		s.escaped, changed = o.escaped, true
	}
	if s.cond != o.cond && s.cond.Mask != 0 {
		s.cond, changed = Guard{}, true
	}
	changed = s.guards.meet(&o.guards) || changed
	// Both lists are sorted by offset: merge them, copying only once
	// the result differs from s's.
	var kept []slot
	differs := false
	keep := func(i int, sl slot) {
		if !differs && i < len(s.slots) && sameSlot(s.slots[i], sl) {
			return
		}
		if !differs {
			differs = true
			kept = append(kept, s.slots[:i]...)
		}
		kept = append(kept, sl)
	}
	n := 0
	for i, j := 0, 0; i < len(s.slots) && j < len(o.slots); {
		a, b := s.slots[i], o.slots[j]
		switch {
		case a.off < b.off:
			i++
		case a.off > b.off:
			j++
		default:
			if a.size == b.size {
				keep(n, slot{a.off, a.size, a.v.Join(b.v)})
				n++
			}
			i++
			j++
		}
	}
	if !differs && n < len(s.slots) {
		differs, kept = true, s.slots[:n:n]
	}
	if differs {
		s.slots, changed = kept, true
	}
	return changed
}

func sameSlot(a, b slot) bool { return a.off == b.off && a.size == b.size && a.v.Equal(b.v) }

// slot is the value of the size-byte word at off, if known.
func (s *state) slot(off, size int64) (Value, bool) {
	i := sort.Search(len(s.slots), func(i int) bool { return s.slots[i].off >= off })
	if i < len(s.slots) && s.slots[i].off == off && s.slots[i].size == size {
		return s.slots[i].v, true
	}
	return Value{}, false
}

// maxSlots bounds the words of a frame the analysis follows: beyond, the
// lowest are forgotten.
const maxSlots = 64

// store notes that size bytes at off now hold v (Unknown forgets them).
func (s *state) store(off, size int64, v Value) {
	out := make([]slot, 0, len(s.slots)+1)
	for _, sl := range s.slots {
		if sl.off+sl.size <= off || sl.off >= off+size {
			out = append(out, sl)
		}
	}
	if v.Kind != Unknown {
		i := sort.Search(len(out), func(i int) bool { return out[i].off >= off })
		out = slices.Insert(out, i, slot{off, size, v})
	}
	if len(out) > maxSlots {
		out = out[len(out)-maxSlots:]
	}
	s.slots = out
}

// forget drops what is known of the frame's words from off up. The
// slots are sorted: those kept are a prefix.
func (s *state) forget(off int64) {
	n := 0
	for n < len(s.slots) && s.slots[n].off+s.slots[n].size <= off {
		n++
	}
	if n < len(s.slots) {
		s.slots = s.slots[:n:n]
	}
}

// escape notes that the address v holds, if in the frame, is given
// away.
func (s *state) escape(v Value) {
	if v.Kind == Stack {
		s.escaped = min(s.escaped, v.Offset())
	}
}

// argValues are the values of the argument registers.
func (s *state) argValues() [6]Value {
	var out [6]Value
	for i, r := range args {
		out[i] = s.regs[r]
	}
	return out
}

// argFields are the words known in the frame at the addresses the
// arguments hold: what a callee reads through them.
func (s *state) argFields() []ArgField {
	var out []ArgField
	for i, r := range args {
		v := s.regs[r]
		if v.Kind != Stack {
			continue
		}
		base := v.Offset()
		for _, sl := range s.slots {
			if sl.off >= base && sl.off < base+maxField {
				out = append(out, ArgField{Arg: uint8(i), Offset: sl.off - base, Value: sl.v})
			}
		}
	}
	return out
}

// maxField bounds how far into a structure passed by address the
// analysis follows its fields.
const maxField = 256

// ArgField is a word of a structure a call is given by address.
type ArgField struct {
	// Arg is the argument that points to the structure.
	Arg uint8
	// Offset is the word's offset in it.
	Offset int64
	Value  Value
}
