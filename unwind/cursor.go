package unwind

import (
	"errors"
	"fmt"
	"io"
)

// Memory is the memory of the thread being unwound.
type Memory interface {
	// Word returns the 8 bytes at addr, little-endian.
	Word(addr uint64) (uint64, error)
}

// Finder finds the CFI of the code at an address.
type Finder interface {
	// Table returns the CFI of the object mapped at pc, and the bias
	// that, added to the table's link-time addresses, gives run-time
	// addresses. An address outside any object with CFI is an error.
	Table(pc uint64) (t *Table, bias uint64, err error)
}

// MaxFrames bounds an unwind: deeper stacks are reported as errors rather
// than walked forever when CFI or memory is corrupt.
const MaxFrames = 256

// ErrLoop reports a frame whose caller's stack pointer is not above its
// own: corrupt CFI or stack, which would otherwise unwind forever.
var ErrLoop = errors.New("stack pointer does not move up")

// Cursor walks the frames of a thread stopped at system call entry, from
// the innermost outwards. It is not safe for concurrent use.
type Cursor struct {
	find  Finder
	mem   Memory
	entry Regs
	// pc is the frame's return address, or for the innermost frame and a
	// frame interrupted by a signal, the next instruction to run (exact).
	pc    uint64
	exact bool
	locs  [NumRegs]loc
	// spRead records that the entry stack pointer is an input.
	spRead bool
	inputs []Input
	depth  int
}

// NewCursor returns a cursor on the innermost frame of a thread stopped at
// system call entry, with registers regs. Its pc is the instruction after
// the syscall instruction, which changes no register the CFI describes, so
// its CFI row is the row of the syscall instruction.
func NewCursor(regs *Regs, mem Memory, find Finder) *Cursor {
	c := &Cursor{find: find, mem: mem, entry: *regs, pc: regs[RA]}
	for r := range c.locs {
		c.locs[r] = loc{kind: locEntry}
	}
	c.locs[RSP] = loc{kind: locValue, val: value{v: regs[RSP], spRel: true}}
	// The instruction pointer is where every unwind starts, known from
	// the first: no input (an expression of a PLT entry reads it).
	c.locs[RA] = loc{kind: locValue, val: value{v: regs[RA]}}
	return c
}

// PC returns the frame's instruction pointer: a return address for callers.
func (c *Cursor) PC() uint64 { return c.pc }

// CallSite returns an address inside the instruction that left the frame:
// the call for a caller (its return address minus one, which lies in the
// calling function even when the call is its last instruction), the
// syscall instruction for the innermost frame, or the interrupted
// instruction after a signal.
func (c *Cursor) CallSite() uint64 {
	if c.exact {
		return c.pc
	}
	return c.pc - 1
}

// Depth returns how many frames the cursor has stepped out of.
func (c *Cursor) Depth() int { return c.depth }

// Inputs returns the values the unwind has read so far, in order. The
// unwind is a function of the entry instruction pointer and these values:
// another thread whose entry pc is the same and whose inputs, read in the
// same order, have the same values unwinds to the same frames, as long as
// the same objects are mapped at the same addresses.
func (c *Cursor) Inputs() []Input { return c.inputs }

// Next steps to the caller's frame. It returns io.EOF at the outermost
// frame, whose return address the CFI marks undefined or which returns to
// address zero.
func (c *Cursor) Next() error {
	if c.depth >= MaxFrames {
		return fmt.Errorf("more than %d frames", MaxFrames)
	}
	t, bias, err := c.find.Table(c.CallSite())
	if err != nil {
		return err
	}
	row, err := t.Row(c.CallSite() - bias)
	if err != nil {
		return err
	}
	return c.apply(&row)
}

// NextWithRow steps to the caller with row, for a frame whose rules the
// caller of the cursor found other than in the CFI that covers its pc.
func (c *Cursor) NextWithRow(row *Row) error {
	if c.depth >= MaxFrames {
		return fmt.Errorf("more than %d frames", MaxFrames)
	}
	return c.apply(row)
}

// apply moves to the caller with the rules of row.
func (c *Cursor) apply(row *Row) error {
	cfa, err := c.cfa(row)
	if err != nil {
		return fmt.Errorf("CFA: %w", err)
	}
	var next [NumRegs]loc
	for r := range next {
		if next[r], err = c.rule(row.Regs[r], Reg(r), &cfa); err != nil {
			return fmt.Errorf("%s: %w", Reg(r), err)
		}
	}
	if row.Regs[RSP].Kind == RuleUnspecified {
		// The CFA is, by definition on x86_64, the caller's stack pointer.
		next[RSP] = loc{kind: locValue, val: cfa}
	}
	switch row.Regs[RA].Kind {
	case RuleUndefined:
		return io.EOF
	case RuleUnspecified, RuleSameValue:
		return errors.New("no rule recovers the return address")
	}
	if !row.Signal {
		if err := c.movesUp(cfa, row.Regs[RA].Kind == RuleRegister); err != nil {
			return err
		}
	}
	ra, err := c.read(&next, RA)
	if err != nil {
		return fmt.Errorf("return address: %w", err)
	}
	if ra.v == 0 {
		return io.EOF
	}
	c.locs, c.pc, c.exact = next, ra.v, row.Signal
	c.depth++
	return nil
}

// movesUp checks that the caller's stack pointer (the CFA) is above the
// frame's: a call pushes at least the return address. A frame that holds
// its return address in a register instead may leave the CFA at the stack
// pointer (glibc's vfork pops it into rdi, so that the child's use of the
// shared stack cannot clobber it). Where one of the two is relative to
// the entry stack pointer and the other is not, comparing them would make
// the absolute stack pointer an input of every unwind through a
// frame-pointer frame; MaxFrames bounds those unwinds instead.
func (c *Cursor) movesUp(cfa value, raInRegister bool) error {
	sp, err := c.read(&c.locs, RSP)
	if err != nil {
		return err
	}
	if sp.spRel == cfa.spRel && (cfa.v < sp.v || cfa.v == sp.v && !raInRegister) {
		return fmt.Errorf("CFA %#x at or below the stack pointer %#x: %w", cfa.v, sp.v, ErrLoop)
	}
	return nil
}

func (c *Cursor) cfa(row *Row) (value, error) {
	if row.CFA.Expr != nil {
		return c.eval(row.CFA.Expr, &c.locs, nil, nil)
	}
	base, err := c.read(&c.locs, row.CFA.Reg)
	if err != nil {
		return value{}, err
	}
	return value{v: base.v + uint64(row.CFA.Offset), spRel: base.spRel}, nil
}

// rule gives the caller's register reg by rule, reading nothing that can
// wait.
func (c *Cursor) rule(rule Rule, reg Reg, cfa *value) (loc, error) {
	switch rule.Kind {
	case RuleUnspecified, RuleSameValue:
		return c.locs[reg], nil
	case RuleUndefined:
		return loc{kind: locUndefined}, nil
	case RuleOffset:
		return loc{kind: locSaved, val: value{v: cfa.v + uint64(rule.Offset), spRel: cfa.spRel}}, nil
	case RuleValOffset:
		return loc{kind: locValue, val: value{v: cfa.v + uint64(rule.Offset), spRel: cfa.spRel}}, nil
	case RuleRegister:
		if int(rule.Reg) >= NumRegs {
			return loc{}, fmt.Errorf("copied from untracked register %d", rule.Reg)
		}
		// Read now: a loc left at the entry value would be read later
		// as the entry value of the register it is copied into.
		v, err := c.read(&c.locs, rule.Reg)
		if err != nil {
			return loc{}, err
		}
		return loc{kind: locValue, val: v}, nil
	case RuleExpression, RuleValExpression:
		v, err := c.eval(rule.Expr, &c.locs, cfa, cfa)
		if err != nil {
			return loc{}, err
		}
		if rule.Kind == RuleExpression {
			return loc{kind: locSaved, val: v}, nil
		}
		return loc{kind: locValue, val: v}, nil
	}
	return loc{}, fmt.Errorf("unknown rule kind %d", rule.Kind)
}

// read returns the value of reg in locs, reading it (an input) if needed.
func (c *Cursor) read(locs *[NumRegs]loc, reg Reg) (value, error) {
	l := &locs[reg]
	switch l.kind {
	case locValue:
		return l.val, nil
	case locEntry:
		c.inputs = append(c.inputs, Input{Kind: InputRegister, Reg: reg, Value: c.entry[reg]})
		*l = loc{kind: locValue, val: value{v: c.entry[reg]}}
		return l.val, nil
	case locSaved:
		w, err := c.word(l.val)
		if err != nil {
			return value{}, err
		}
		*l = loc{kind: locValue, val: value{v: w}}
		return l.val, nil
	}
	return value{}, fmt.Errorf("%s is undefined", reg)
}

// word reads the word at addr, an input.
func (c *Cursor) word(addr value) (uint64, error) {
	w, err := c.mem.Word(addr.v)
	if err != nil {
		return 0, err
	}
	in := Input{Kind: InputMemory, Addr: addr.v, Value: w}
	if addr.spRel {
		in.Kind, in.Offset = InputStack, int64(addr.v-c.entry[RSP])
	}
	c.inputs = append(c.inputs, in)
	return w, nil
}

// needSP makes the entry stack pointer an input, once: a computation used
// its absolute value.
func (c *Cursor) needSP() {
	if !c.spRead {
		c.spRead = true
		c.inputs = append(c.inputs, Input{Kind: InputRegister, Reg: RSP, Value: c.entry[RSP]})
	}
}

// Stack is a copy of the top of a thread's stack: Data holds the bytes
// from Addr upwards, except in the Holes. It is the Memory of an unwind
// from a snapshot.
type Stack struct {
	Addr uint64
	Data []byte
	// Holes are the parts of the copy whose bytes are unknown: pages of
	// the stack that could not be read when it was copied (never touched,
	// or swapped out). A read that touches one fails with ErrStackHole.
	Holes []Hole
}

// Hole is a range of addresses, [Start, End), of a Stack whose bytes are
// unknown.
type Hole struct {
	Start, End uint64
}

// ErrOutsideStack reports a read beyond the copied part of the stack.
var ErrOutsideStack = errors.New("outside the stack copy")

// ErrStackHole reports a read of a part of the stack copy that could not
// be read from the thread.
var ErrStackHole = errors.New("in a page of the stack that could not be copied")

// StackLimit is the error of a read outside a Stack: it says how long a
// copy the read needed. It matches ErrOutsideStack.
type StackLimit struct {
	Addr uint64
	// Need is how many bytes above the copy's start the read reached, or
	// a negative offset for a read below it.
	Need int64
}

// Error says which read fell outside the copy.
func (e *StackLimit) Error() string {
	return fmt.Sprintf("read of %#x (sp%+d): %v", e.Addr, e.Need-8, ErrOutsideStack)
}

// Is makes a StackLimit match ErrOutsideStack.
func (e *StackLimit) Is(target error) bool { return target == ErrOutsideStack }

// Word implements Memory.
func (s *Stack) Word(addr uint64) (uint64, error) {
	off := addr - s.Addr
	if addr < s.Addr || off > uint64(len(s.Data)) || uint64(len(s.Data))-off < 8 {
		return 0, &StackLimit{Addr: addr, Need: int64(off) + 8}
	}
	for _, h := range s.Holes {
		if addr < h.End && h.Start < addr+8 {
			return 0, fmt.Errorf("read of %#x (sp%+d): %w", addr, off, ErrStackHole)
		}
	}
	r := &reader{data: s.Data[off : off+8]}
	return r.u64(), nil
}
