package unwind

import "fmt"

// InputKind says where an unwind read a value from.
type InputKind uint8

// Where inputs come from.
const (
	// InputRegister is an entry register's value.
	InputRegister InputKind = iota + 1
	// InputStack is a word of memory at a fixed offset from the entry
	// stack pointer.
	InputStack
	// InputMemory is a word of memory at an absolute address, computed
	// from earlier inputs.
	InputMemory
)

// Input is one value an unwind depended on. The entry instruction pointer
// is always the first thing an unwind depends on, and is not listed.
type Input struct {
	Kind InputKind
	// Reg is the register of an InputRegister.
	Reg Reg
	// Offset is the address of an InputStack relative to the entry stack
	// pointer.
	Offset int64
	// Addr is the absolute address of an InputStack or InputMemory.
	Addr uint64
	// Value is what was read.
	Value uint64
}

// String writes the input as "rbp=0x7ffc0010", "[sp+0x18]=0x55aa1234"
// or "[0x7ffc0020]=0x55aa1234".
func (in Input) String() string {
	switch in.Kind {
	case InputRegister:
		return fmt.Sprintf("%s=%#x", in.Reg, in.Value)
	case InputStack:
		return fmt.Sprintf("[sp%+#x]=%#x", in.Offset, in.Value)
	default:
		return fmt.Sprintf("[%#x]=%#x", in.Addr, in.Value)
	}
}

// value is a number an unwind computed, and whether it is the entry stack
// pointer plus a constant (spRel). Memory at such an address is named by
// its offset from the stack pointer, so that the same call path, entered
// at another depth, reads the same inputs.
type value struct {
	v     uint64
	spRel bool
}

// locKind says how much of a register's value is known.
type locKind uint8

const (
	// locUndefined: the CFI says the value is lost.
	locUndefined locKind = iota
	// locEntry: the register still holds its entry value, not yet read.
	locEntry
	// locValue: the value is known.
	locValue
	// locSaved: the value is saved in memory at addr, not yet read.
	locSaved
)

// loc is what an unwind knows of one register of one frame. Values are
// read only when a rule needs them, so that an unwind depends on nothing
// it did not use (a saved loop counter must not make two calls differ).
type loc struct {
	kind locKind
	// val is the value (locValue) or the address it is saved at
	// (locSaved).
	val value
}
