package unwind

import (
	"errors"
	"fmt"
)

// DWARF expression operations (DWARF 5, section 2.5) that CFI uses.
const (
	opAddr         = 0x03
	opDeref        = 0x06
	opConst1u      = 0x08
	opConst1s      = 0x09
	opConst2u      = 0x0a
	opConst2s      = 0x0b
	opConst4u      = 0x0c
	opConst4s      = 0x0d
	opConst8u      = 0x0e
	opConst8s      = 0x0f
	opConstu       = 0x10
	opConsts       = 0x11
	opDup          = 0x12
	opDrop         = 0x13
	opOver         = 0x14
	opPick         = 0x15
	opSwap         = 0x16
	opRot          = 0x17
	opAbs          = 0x19
	opAnd          = 0x1a
	opDiv          = 0x1b
	opMinus        = 0x1c
	opMod          = 0x1d
	opMul          = 0x1e
	opNeg          = 0x1f
	opNot          = 0x20
	opOr           = 0x21
	opPlus         = 0x22
	opPlusUconst   = 0x23
	opShl          = 0x24
	opShr          = 0x25
	opShra         = 0x26
	opXor          = 0x27
	opBra          = 0x28
	opEq           = 0x29
	opGe           = 0x2a
	opGt           = 0x2b
	opLe           = 0x2c
	opLt           = 0x2d
	opNe           = 0x2e
	opSkip         = 0x2f
	opLit0         = 0x30
	opLit31        = 0x4f
	opBreg0        = 0x70
	opBreg31       = 0x8f
	opBregx        = 0x92
	opDerefSize    = 0x94
	opNop          = 0x96
	opCallFrameCFA = 0x9c
)

// maxExprSteps bounds the operations one expression may execute: CFI
// expressions are a handful of operations, and a branch may loop.
const maxExprSteps = 1000

// exprEval evaluates one DWARF expression for a cursor.
type exprEval struct {
	c     *Cursor
	locs  *[NumRegs]loc
	cfa   *value
	stack []value
}

// eval runs expr over the registers locs, with push (if not nil) on the
// stack first, and returns the top of the stack.
func (c *Cursor) eval(expr []byte, locs *[NumRegs]loc, push, cfa *value) (value, error) {
	e := exprEval{c: c, locs: locs, cfa: cfa}
	if push != nil {
		e.stack = append(e.stack, *push)
	}
	r := &reader{data: expr}
	for steps := 0; !r.empty(); steps++ {
		if steps == maxExprSteps {
			return value{}, errors.New("expression runs too long")
		}
		op := r.u8()
		if err := e.step(op, r); err != nil {
			return value{}, fmt.Errorf("expression operation %#x: %w", op, err)
		}
		if r.err != nil {
			return value{}, fmt.Errorf("expression operation %#x: %w", op, r.err)
		}
	}
	if len(e.stack) == 0 {
		return value{}, errors.New("expression leaves an empty stack")
	}
	return e.stack[len(e.stack)-1], nil
}

func (e *exprEval) push(v value) { e.stack = append(e.stack, v) }

func (e *exprEval) pop() (value, error) {
	if len(e.stack) == 0 {
		return value{}, errors.New("stack underflow")
	}
	v := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	return v, nil
}

func (e *exprEval) step(op uint8, r *reader) error {
	switch {
	case op >= opLit0 && op <= opLit31:
		e.push(value{v: uint64(op - opLit0)})
		return nil
	case op >= opBreg0 && op <= opBreg31:
		return e.breg(Reg(op-opBreg0), r.sleb())
	}
	switch op {
	case opNop:
		return nil
	case opBregx:
		reg := r.uleb()
		return e.breg(Reg(min(reg, 255)), r.sleb())
	case opCallFrameCFA:
		if e.cfa == nil {
			return errors.New("DW_OP_call_frame_cfa in the CFA's own expression")
		}
		e.push(*e.cfa)
		return nil
	case opDeref, opDerefSize:
		return e.deref(op, r)
	case opSkip, opBra:
		return e.branch(op, r)
	}
	if v, ok := constant(op, r); ok {
		e.push(value{v: v})
		return nil
	}
	if ok, err := e.shuffle(op, r); ok || err != nil {
		return err
	}
	return e.arithmetic(op, r)
}

// constant decodes the operations that push a constant.
func constant(op uint8, r *reader) (uint64, bool) {
	switch op {
	case opAddr, opConst8u, opConst8s:
		return r.u64(), true
	case opConst1u:
		return uint64(r.u8()), true
	case opConst1s:
		return uint64(int64(int8(r.u8()))), true
	case opConst2u:
		return uint64(r.u16()), true
	case opConst2s:
		return uint64(int64(int16(r.u16()))), true
	case opConst4u:
		return uint64(r.u32()), true
	case opConst4s:
		return uint64(int64(int32(r.u32()))), true
	case opConstu:
		return r.uleb(), true
	case opConsts:
		return uint64(r.sleb()), true
	}
	return 0, false
}

func (e *exprEval) breg(reg Reg, off int64) error {
	if int(reg) >= NumRegs {
		return fmt.Errorf("register %d is not tracked", reg)
	}
	v, err := e.c.read(e.locs, reg)
	if err != nil {
		return err
	}
	e.push(value{v: v.v + uint64(off), spRel: v.spRel})
	return nil
}

func (e *exprEval) deref(op uint8, r *reader) error {
	size := uint8(8)
	if op == opDerefSize {
		size = r.u8()
	}
	addr, err := e.pop()
	if err != nil {
		return err
	}
	w, err := e.c.word(addr)
	if err != nil {
		return err
	}
	if size < 8 {
		w &= 1<<(8*uint64(size)) - 1
	}
	e.push(value{v: w})
	return nil
}

// branch executes DW_OP_skip and DW_OP_bra, which move by a signed number
// of bytes from the end of the operation.
func (e *exprEval) branch(op uint8, r *reader) error {
	off := int64(int16(r.u16()))
	if op == opBra {
		cond, err := e.pop()
		if err != nil {
			return err
		}
		if e.absolute(cond).v == 0 {
			return nil
		}
	}
	target := int64(r.off) + off
	if target < 0 || target > int64(len(r.data)) {
		return fmt.Errorf("branch to %d outside the expression", target)
	}
	r.off = int(target)
	return nil
}

// shuffleDepth is how many values each stack operation needs.
var shuffleDepth = map[uint8]int{opDup: 1, opDrop: 1, opOver: 2, opSwap: 2, opRot: 3, opPick: 0}

// shuffle executes the stack operations, which move values and keep what
// they know of them.
func (e *exprEval) shuffle(op uint8, r *reader) (bool, error) {
	n := len(e.stack)
	want, ok := shuffleDepth[op]
	if !ok {
		return false, nil
	}
	if n < want {
		return true, errors.New("stack underflow")
	}
	switch op {
	case opDup:
		e.push(e.stack[n-1])
	case opDrop:
		e.stack = e.stack[:n-1]
	case opOver:
		e.push(e.stack[n-2])
	case opPick:
		i := int(r.u8())
		if i >= n {
			return true, errors.New("DW_OP_pick beyond the stack")
		}
		e.push(e.stack[n-1-i])
	case opSwap:
		e.stack[n-1], e.stack[n-2] = e.stack[n-2], e.stack[n-1]
	case opRot:
		e.stack[n-1], e.stack[n-2], e.stack[n-3] = e.stack[n-2], e.stack[n-3], e.stack[n-1]
	}
	return true, nil
}

// arithmetic executes the unary and binary operations. Adding a constant
// to, or subtracting one from, a stack-relative value keeps it relative,
// and so does the difference of two; anything else needs the stack
// pointer's absolute value, which becomes an input.
func (e *exprEval) arithmetic(op uint8, r *reader) error {
	if op == opPlusUconst || op == opNeg || op == opNot || op == opAbs {
		return e.unary(op, r)
	}
	if !binaryOps[op] {
		return errors.New("unsupported operation")
	}
	b, err := e.pop()
	if err != nil {
		return err
	}
	a, err := e.pop()
	if err != nil {
		return err
	}
	switch {
	case op == opPlus && !(a.spRel && b.spRel):
		e.push(value{v: a.v + b.v, spRel: a.spRel || b.spRel})
		return nil
	case op == opMinus && !(b.spRel && !a.spRel):
		e.push(value{v: a.v - b.v, spRel: a.spRel && !b.spRel})
		return nil
	}
	v, err := binaryOp(op, e.absolute(a).v, e.absolute(b).v)
	if err != nil {
		return err
	}
	e.push(value{v: v})
	return nil
}

func (e *exprEval) unary(op uint8, r *reader) error {
	a, err := e.pop()
	if err != nil {
		return err
	}
	if op == opPlusUconst {
		e.push(value{v: a.v + r.uleb(), spRel: a.spRel})
		return nil
	}
	v := e.absolute(a).v
	switch op {
	case opNeg:
		v = -v
	case opNot:
		v = ^v
	case opAbs:
		if int64(v) < 0 {
			v = -v
		}
	}
	e.push(value{v: v})
	return nil
}

// binaryOps are the operations binaryOp executes.
var binaryOps = map[uint8]bool{opAnd: true, opOr: true, opXor: true, opPlus: true, opMinus: true, opMul: true,
	opShl: true, opShr: true, opShra: true, opDiv: true, opMod: true,
	opEq: true, opNe: true, opLt: true, opLe: true, opGt: true, opGe: true}

func binaryOp(op uint8, a, b uint64) (uint64, error) {
	switch op {
	case opAnd:
		return a & b, nil
	case opOr:
		return a | b, nil
	case opXor:
		return a ^ b, nil
	case opPlus:
		return a + b, nil
	case opMinus:
		return a - b, nil
	case opMul:
		return a * b, nil
	case opShl:
		return a << b, nil
	case opShr:
		return a >> b, nil
	case opShra:
		return uint64(int64(a) >> b), nil
	case opDiv, opMod:
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		if op == opDiv {
			return uint64(int64(a) / int64(b)), nil
		}
		return a % b, nil
	}
	return compare(op, int64(a), int64(b))
}

func compare(op uint8, a, b int64) (uint64, error) {
	var t bool
	switch op {
	case opEq:
		t = a == b
	case opNe:
		t = a != b
	case opLt:
		t = a < b
	case opLe:
		t = a <= b
	case opGt:
		t = a > b
	case opGe:
		t = a >= b
	default:
		return 0, errors.New("unsupported operation")
	}
	if t {
		return 1, nil
	}
	return 0, nil
}

// absolute returns v as a plain number: for a stack-relative value, the
// entry stack pointer becomes an input of the unwind.
func (e *exprEval) absolute(v value) value {
	if v.spRel {
		e.c.needSP()
	}
	return value{v: v.v}
}
