package x86

import (
	"fmt"
	"slices"
	"strings"
)

// Kind says what a Value knows of a register.
type Kind uint8

// Kinds of values.
const (
	// Unknown is any value.
	Unknown Kind = iota
	// Const is one of a small set of constants.
	Const
	// Param is the value an argument register had when the function was
	// entered: what its caller passed.
	Param
	// Slot is the 8-byte word stored at a fixed link-time address, such
	// as a GOT slot.
	Slot
	// Table is an address read from a jump table (an entry indexed from
	// a constant base, plus that base): a place in the same function.
	// Where the table's address is known, Consts are that address, the
	// size of its entries and what they are added to: 4-byte entries
	// relative to a base (position-independent code), 8-byte ones
	// absolute (added to 0).
	Table
	// Stack is an address in the function's frame: Offset from the
	// stack pointer at entry.
	Stack
	// Field is the word at an offset (Offset) from a pointer that is a
	// parameter or a Slot (Base, BaseData): a field of a structure the
	// caller passed, or that a global points to.
	Field
	// Ret is what the call at address Consts[0] returned.
	Ret
	// Rotated is a value rotated right by 17 bits: the first half of
	// glibc's PTR_DEMANGLE.
	Rotated
	// Demangled is a pointer glibc stored mangled (PTR_MANGLE: xor with
	// the thread's pointer guard, rotated) and has demangled to call.
	Demangled
	// Loaded is the word an instruction (named by the address after it,
	// Consts[0]) read through a pointer the analysis does not know: the
	// same value wherever it goes, a Field's base. Read through what a
	// call returned, it keeps that call's address in Consts[1] (Found).
	Loaded
	// Bits is a parameter with some bits changed, as code passes its
	// flags on: the bits of Consts[0] are parameter Arg's, those of
	// Consts[1] set, those of Consts[2] either, the others clear. It
	// keeps what a test of those bits says of the parameter (Guard).
	Bits
	// Found is an address computed from what the call at Consts[0]
	// returned, a word read through it and a value the analysis does
	// not know, or null: how the loader makes a symbol's address from
	// what its lookup found (the object's base plus the symbol's value),
	// which the lookup's name tells (infer's Object.NameArgs).
	Found
	// Out is what the call at Consts[0] left in a word of the frame it
	// was given the address of: its answer there, as a lookup writes
	// the symbol it found. Only Code.Choices makes it.
	Out
)

// MaxConsts is how many constants a Value holds before it becomes
// Unknown: enough for a call whose number is picked among a few, few
// enough that a loop counting up gives up quickly.
const MaxConsts = 16

// Value is what the analysis knows of a 64-bit register. The zero Value
// is Unknown.
type Value struct {
	Kind Kind
	// Arg is the argument register of a Param, 0 to 5 (rdi, rsi, rdx,
	// rcx, r8, r9).
	Arg uint8
	// Consts are a Const's values, sorted, or a Slot's address alone.
	// They are never modified once the Value is made.
	Consts []uint64
}

// Offset is a Stack's offset, or the last offset of a Field's path.
func (v Value) Offset() int64 { return int64(v.Consts[len(v.Consts)-1]) }

// StackOf is the Value of the address off bytes from the stack pointer
// at entry.
func StackOf(off int64) Value { return Value{Kind: Stack, Consts: []uint64{uint64(off)}} }

// maxPath bounds how many pointers a Field follows.
const maxPath = 3

// FieldOf is the Value of the word off bytes from what base points to:
// base is a Param, a Slot, a Loaded or a Field, whose path the result
// extends; beyond maxPath pointers, it is Unknown.
func FieldOf(base Value, off int64) Value {
	switch base.Kind {
	case Param:
		return Value{Kind: Field, Arg: uint8(Param), Consts: []uint64{uint64(base.Arg), uint64(off)}}
	case Slot, Loaded:
		return Value{Kind: Field, Arg: uint8(base.Kind), Consts: []uint64{base.Consts[0], uint64(off)}}
	case Field:
		if len(base.Consts) > maxPath {
			return Value{}
		}
		return Value{Kind: Field, Arg: base.Arg, Consts: append(slices.Clone(base.Consts), uint64(off))}
	}
	return Value{}
}

// Base is the pointer a Field's path starts from: a Param, a Slot or a
// Loaded.
func (v Value) Base() Value {
	if k := Kind(v.Arg); k == Slot || k == Loaded {
		return Value{Kind: k, Consts: v.Consts[:1]}
	}
	return ParamOf(int(v.Consts[0]))
}

// Parent is the pointer a Field is read through: its base, or the
// Field one step shorter.
func (v Value) Parent() Value {
	if len(v.Consts) == 2 {
		return v.Base()
	}
	return Value{Kind: Field, Arg: v.Arg, Consts: v.Consts[:len(v.Consts)-1]}
}

// Path is the offsets a Field adds at each pointer it follows.
func (v Value) Path() []int64 {
	out := make([]int64, len(v.Consts)-1)
	for i, c := range v.Consts[1:] {
		out[i] = int64(c)
	}
	return out
}

// ConstOf is the Value of one constant.
func ConstOf(c uint64) Value { return Value{Kind: Const, Consts: []uint64{c}} }

// ParamOf is the Value of argument register arg at entry.
func ParamOf(arg int) Value { return Value{Kind: Param, Arg: uint8(arg)} }

// SlotOf is the Value of the word at addr.
func SlotOf(addr uint64) Value { return Value{Kind: Slot, Consts: []uint64{addr}} }

// FoundOf is the Value of an address computed from what the call at
// addr returned.
func FoundOf(addr uint64) Value { return Value{Kind: Found, Consts: []uint64{addr}} }

// Origin is the call whose result v was computed from: what it
// returned (Ret) or wrote where it was given (Out), a word read through
// that (Loaded), or an address made from both (Found).
func (v Value) Origin() (uint64, bool) {
	switch {
	case v.Kind == Ret || v.Kind == Found || v.Kind == Out:
		return v.Consts[0], true
	case v.Kind == Loaded && len(v.Consts) == 2:
		return v.Consts[1], true
	}
	return 0, false
}

// null says whether v is the constant 0 alone.
func (v Value) null() bool { return v.Kind == Const && len(v.Consts) == 1 && v.Consts[0] == 0 }

// Equal says whether two values are the same.
func (v Value) Equal(w Value) bool {
	return v.Kind == w.Kind && v.Arg == w.Arg && slices.Equal(v.Consts, w.Consts)
}

// Join is the least value that covers both v and w.
func (v Value) Join(w Value) Value {
	switch {
	case v.Equal(w):
		return v
	case (v.Kind == Param || v.Kind == Bits) && (w.Kind == Param || w.Kind == Bits) && v.Arg == w.Arg:
		return joinBits(v, w)
	case v.Kind == Table && w.Kind == Table:
		// Targets of two tables: a place in the function still, which
		// neither table tells alone.
		return Value{Kind: Table}
	}
	if a, ok := v.found(w); ok {
		return FoundOf(a)
	}
	if v.Kind != Const || w.Kind != Const {
		return Value{}
	}
	merged := append(slices.Clone(v.Consts), w.Consts...)
	slices.Sort(merged)
	merged = slices.Compact(merged)
	if len(merged) > MaxConsts {
		return Value{}
	}
	return Value{Kind: Const, Consts: merged}
}

// found says whether v and w join into an address made from one call's
// result: both are made from it, or one is and the other is null, as
// where the loader's lookup found nothing.
func (v Value) found(w Value) (uint64, bool) {
	a, aok := v.Origin()
	b, bok := w.Origin()
	switch {
	case aok && bok:
		return a, a == b
	case aok:
		return a, w.null()
	case bok:
		return b, v.null()
	}
	return 0, false
}

// mapConsts applies f to every constant of a Const, and is Unknown
// otherwise.
func (v Value) mapConsts(f func(uint64) uint64) Value {
	if v.Kind != Const {
		return Value{}
	}
	out := make([]uint64, len(v.Consts))
	for i, c := range v.Consts {
		out[i] = f(c)
	}
	slices.Sort(out)
	return Value{Kind: Const, Consts: slices.Compact(out)}
}

// argNames are the argument registers in the order of the System V ABI.
var argNames = [6]string{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}

func (v Value) String() string {
	switch v.Kind {
	case Const:
		parts := make([]string, len(v.Consts))
		for i, c := range v.Consts {
			parts[i] = fmt.Sprintf("%#x", c)
		}
		return strings.Join(parts, "|")
	case Param:
		return "param " + argNames[v.Arg]
	case Slot:
		return fmt.Sprintf("[%#x]", v.Consts[0])
	case Table:
		return "jump table"
	case Stack:
		return fmt.Sprintf("stack%+d", v.Offset())
	case Field:
		return fmt.Sprintf("%v%v", v.Base(), v.Path())
	case Ret:
		return fmt.Sprintf("ret %#x", v.Consts[0])
	case Rotated:
		return "rotated"
	case Demangled:
		return "demangled"
	case Loaded:
		if a, ok := v.Origin(); ok {
			return fmt.Sprintf("loaded@%#x from ret %#x", v.Consts[0], a)
		}
		return fmt.Sprintf("loaded@%#x", v.Consts[0])
	case Found:
		return fmt.Sprintf("found from ret %#x", v.Consts[0])
	case Out:
		return fmt.Sprintf("out %#x", v.Consts[0])
	case Bits:
		return fmt.Sprintf("param %s&%#x|%#x|?%#x", argNames[v.Arg], v.Consts[0], v.Consts[1], v.Consts[2])
	}
	return "?"
}
