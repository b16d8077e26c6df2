package unwind

import (
	"fmt"
	"strings"
)

// RuleKind says how a register of the caller is recovered.
type RuleKind uint8

// The DWARF register rules (DWARF 5, section 6.4.1).
const (
	// RuleUnspecified: the CFI says nothing, and the register keeps its
	// value (callee-saved registers a function does not touch).
	RuleUnspecified RuleKind = iota
	// RuleUndefined: the value is lost; for RA it marks the outermost
	// frame.
	RuleUndefined
	// RuleSameValue: the register keeps its value.
	RuleSameValue
	// RuleOffset: saved in memory at CFA+Offset.
	RuleOffset
	// RuleValOffset: the value is CFA+Offset.
	RuleValOffset
	// RuleRegister: the value is in register Reg.
	RuleRegister
	// RuleExpression: saved in memory at the address Expr computes, with
	// the CFA pushed first.
	RuleExpression
	// RuleValExpression: the value is what Expr computes.
	RuleValExpression
)

// Rule recovers one register of the caller.
type Rule struct {
	Kind   RuleKind
	Reg    Reg
	Offset int64
	Expr   []byte
}

// String writes the rule as readelf does: "c-16" (saved at CFA-16),
// "u" (undefined), "s" (same value), "v+8", a register, "exp", "vexp".
func (r Rule) String() string {
	switch r.Kind {
	case RuleUnspecified:
		return ""
	case RuleUndefined:
		return "u"
	case RuleSameValue:
		return "s"
	case RuleOffset:
		return fmt.Sprintf("c%+d", r.Offset)
	case RuleValOffset:
		return fmt.Sprintf("v%+d", r.Offset)
	case RuleRegister:
		return r.Reg.String()
	case RuleExpression:
		return "exp"
	default:
		return "vexp"
	}
}

// CFARule computes the canonical frame address, the caller's stack pointer:
// Reg+Offset, or Expr when it is not nil.
type CFARule struct {
	Reg    Reg
	Offset int64
	Expr   []byte
}

// String writes the rule as readelf does: "rsp+8", or "exp".
func (c CFARule) String() string {
	if c.Expr != nil {
		return "exp"
	}
	return fmt.Sprintf("%s%+d", c.Reg, c.Offset)
}

// Row is the CFI in effect at one address: how to find the CFA and each
// register of the caller.
type Row struct {
	CFA  CFARule
	Regs [NumRegs]Rule
	// Signal is set in signal trampolines (see FDE.Signal).
	Signal bool
}

// String writes the row as readelf --debug-dump=frames-interp does, with
// the registers that have a rule: "rsp+16 rbx=c-16 ra=c-8".
func (row *Row) String() string {
	var b strings.Builder
	b.WriteString(row.CFA.String())
	for r, rule := range row.Regs {
		if rule.Kind != RuleUnspecified {
			fmt.Fprintf(&b, " %s=%s", Reg(r), rule)
		}
	}
	return b.String()
}

// DWARF call frame instructions.
const (
	cfaAdvanceLoc        = 0x40
	cfaOffset            = 0x80
	cfaRestore           = 0xc0
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpression        = 0x10
	cfaOffsetExtendedSf  = 0x11
	cfaDefCFASf          = 0x12
	cfaDefCFAOffsetSf    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSf       = 0x15
	cfaValExpression     = 0x16
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExtSf = 0x2f
)

// interpreter runs CFI programs up to an address.
type interpreter struct {
	cie *cie
	// loc is the address the row describes from; target the address whose
	// row is wanted.
	loc, target uint64
	row         Row
	// initial is the row after the CIE's instructions, for DW_CFA_restore.
	initial Row
	stack   []Row
}

// rowAt interprets fde's program up to pc, which it covers.
func rowAt(fde *FDE, pc uint64) (Row, error) {
	in := interpreter{cie: fde.cie, loc: fde.Start, target: pc}
	// The CIE's instructions cannot advance: they describe the first
	// instruction of every FDE.
	if done, err := in.run(fde.cie.initial); err != nil || done {
		return Row{}, fmt.Errorf("CIE instructions: %w", orAdvance(err))
	}
	in.initial = in.row
	if _, err := in.run(fde.instructions); err != nil {
		return Row{}, fmt.Errorf("FDE at %#x: %w", fde.Start, err)
	}
	in.row.Signal = fde.Signal
	return in.row, nil
}

func orAdvance(err error) error {
	if err == nil {
		return fmt.Errorf("advance outside an FDE")
	}
	return err
}

// run executes instructions until the end, or until an advance passes the
// target address (done).
func (in *interpreter) run(prog []byte) (done bool, err error) {
	r := &reader{data: prog}
	for !r.empty() {
		op := r.u8()
		var advance uint64
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			advance = uint64(op & 0x3f)
		case cfaOffset:
			in.set(uint64(op&0x3f), Rule{Kind: RuleOffset, Offset: int64(r.uleb()) * in.cie.dataAlign})
		case cfaRestore:
			in.restore(uint64(op & 0x3f))
		default:
			advance, err = in.extended(op, r)
			if err != nil {
				return false, err
			}
		}
		if r.err != nil {
			return false, fmt.Errorf("instruction %#x: %w", op, r.err)
		}
		if advance != 0 {
			in.loc += advance * in.cie.codeAlign
			if in.loc > in.target {
				return true, nil
			}
		}
	}
	return false, nil
}

// extended executes one instruction whose opcode is a whole byte and
// returns how far it advances the location, in code alignment units.
func (in *interpreter) extended(op uint8, r *reader) (uint64, error) {
	switch op {
	case cfaNop, cfaGNUArgsSize:
		if op == cfaGNUArgsSize {
			r.uleb()
		}
	case cfaSetLoc:
		loc := r.pointer(in.cie.fdeEnc, 0)
		if loc < in.loc {
			return 0, fmt.Errorf("DW_CFA_set_loc moves back to %#x", loc)
		}
		return in.setLoc(loc), nil
	case cfaAdvanceLoc1:
		return uint64(r.u8()), nil
	case cfaAdvanceLoc2:
		return uint64(r.u16()), nil
	case cfaAdvanceLoc4:
		return uint64(r.u32()), nil
	case cfaRememberState:
		in.stack = append(in.stack, in.row)
	case cfaRestoreState:
		if len(in.stack) == 0 {
			return 0, fmt.Errorf("DW_CFA_restore_state without remembered state")
		}
		// The CFA rule is part of the state on x86_64 (as GCC and
		// libgcc treat it), so the whole row comes back.
		in.row = in.stack[len(in.stack)-1]
		in.stack = in.stack[:len(in.stack)-1]
	default:
		return 0, in.cfaOrRegister(op, r)
	}
	return 0, nil
}

// setLoc moves to an absolute address, as an advance in code units.
func (in *interpreter) setLoc(loc uint64) uint64 {
	delta := loc - in.loc
	if in.cie.codeAlign > 1 {
		return delta / in.cie.codeAlign
	}
	return delta
}

// cfaOrRegister executes the instructions that define the CFA or a
// register rule.
func (in *interpreter) cfaOrRegister(op uint8, r *reader) error {
	align := in.cie.dataAlign
	switch op {
	case cfaDefCFA:
		in.row.CFA = CFARule{Reg: Reg(r.uleb()), Offset: int64(r.uleb())}
	case cfaDefCFASf:
		in.row.CFA = CFARule{Reg: Reg(r.uleb()), Offset: r.sleb() * align}
	case cfaDefCFARegister:
		in.row.CFA = CFARule{Reg: Reg(r.uleb()), Offset: in.row.CFA.Offset}
	case cfaDefCFAOffset:
		in.row.CFA = CFARule{Reg: in.row.CFA.Reg, Offset: int64(r.uleb())}
	case cfaDefCFAOffsetSf:
		in.row.CFA = CFARule{Reg: in.row.CFA.Reg, Offset: r.sleb() * align}
	case cfaDefCFAExpression:
		in.row.CFA = CFARule{Expr: nonNil(r.bytes(int(r.uleb())))}
	default:
		return in.register(op, r)
	}
	if in.row.CFA.Expr == nil && int(in.row.CFA.Reg) >= NumRegs {
		return fmt.Errorf("CFA in unsupported register %d", in.row.CFA.Reg)
	}
	return nil
}

// register executes the instructions that set one register's rule.
func (in *interpreter) register(op uint8, r *reader) error {
	align := in.cie.dataAlign
	switch op {
	case cfaOffsetExtended:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleOffset, Offset: int64(r.uleb()) * align})
	case cfaOffsetExtendedSf:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleOffset, Offset: r.sleb() * align})
	case cfaGNUNegOffsetExtSf:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleOffset, Offset: -int64(r.uleb()) * align})
	case cfaValOffset:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleValOffset, Offset: int64(r.uleb()) * align})
	case cfaValOffsetSf:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleValOffset, Offset: r.sleb() * align})
	case cfaRestoreExtended:
		in.restore(r.uleb())
	case cfaUndefined:
		in.set(r.uleb(), Rule{Kind: RuleUndefined})
	case cfaSameValue:
		in.set(r.uleb(), Rule{Kind: RuleSameValue})
	case cfaRegister:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleRegister, Reg: Reg(r.uleb())})
	case cfaExpression:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleExpression, Expr: nonNil(r.bytes(int(r.uleb())))})
	case cfaValExpression:
		reg := r.uleb()
		in.set(reg, Rule{Kind: RuleValExpression, Expr: nonNil(r.bytes(int(r.uleb())))})
	default:
		return fmt.Errorf("unknown call frame instruction %#x", op)
	}
	return nil
}

// set gives reg a rule; registers the package does not track are ignored,
// but a rule that copies one into a tracked register is kept, and fails
// only if an unwind needs it.
func (in *interpreter) set(reg uint64, rule Rule) {
	if reg < uint64(NumRegs) {
		in.row.Regs[reg] = rule
	}
}

func (in *interpreter) restore(reg uint64) {
	if reg < uint64(NumRegs) {
		in.row.Regs[reg] = in.initial.Regs[reg]
	}
}

// nonNil keeps an empty expression distinguishable from no expression.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
