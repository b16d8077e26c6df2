package bpf

import (
	"fmt"
	"strings"
)

// Mnemonics of the two-operand operations, shared with the assembler.
var (
	aluNames  = map[uint16]string{AluAdd: "add", AluSub: "sub", AluMul: "mul", AluDiv: "div", AluOr: "or", AluAnd: "and", AluLsh: "lsh", AluRsh: "rsh", AluMod: "mod", AluXor: "xor"}
	jumpNames = map[uint16]string{JmpJeq: "jeq", JmpJgt: "jgt", JmpJge: "jge", JmpJset: "jset"}
)

// Disassemble renders prog one instruction a line, in the text Assemble
// reads: the index, the instruction with absolute jump targets, and after a
// semicolon the seccomp_data field a load reads.
//
//	0000: ld [4]            ; arch
//	0001: jeq #0xc000003e, 2, 3
//	0002: ret ALLOW
//	0003: ret KILL_PROCESS
func Disassemble(prog []Instruction) string {
	var b strings.Builder
	for pc, ins := range prog {
		text, note := render(ins, pc)
		if note == "" {
			fmt.Fprintf(&b, "%04d: %s\n", pc, text)
		} else {
			fmt.Fprintf(&b, "%04d: %-17s ; %s\n", pc, text, note)
		}
	}
	return b.String()
}

// String renders i on its own, with jump targets written relative to the
// next instruction (+n), which Assemble also reads.
func (i Instruction) String() string {
	text, _ := render(i, -1)
	return text
}

// render writes i, at index pc, in assembly; a negative pc makes jump
// targets relative. The note says what a load reads. Instructions that have
// no mnemonic, or carry data in fields their opcode ignores, are written raw
// so that nothing is lost.
func render(i Instruction, pc int) (text, note string) {
	if !canonical(i) {
		return fmt.Sprintf("raw %#02x, %d, %d, %#x", i.Op, i.Jt, i.Jf, i.K), ""
	}
	switch i.Op {
	case opLdAbsW:
		return fmt.Sprintf("ld [%d]", i.K), fieldName(i.K)
	case opLdAbsH:
		return fmt.Sprintf("ldh [%d]", i.K), ""
	case opLdAbsB:
		return fmt.Sprintf("ldb [%d]", i.K), ""
	case opLdIndW:
		return fmt.Sprintf("ld [x + %d]", i.K), ""
	case opLdIndH:
		return fmt.Sprintf("ldh [x + %d]", i.K), ""
	case opLdIndB:
		return fmt.Sprintf("ldb [x + %d]", i.K), ""
	case opLdLen:
		return "ld #len", ""
	case opLdxLen:
		return "ldx #len", ""
	case opLdImm:
		return fmt.Sprintf("ld #%#x", i.K), ""
	case opLdxImm:
		return fmt.Sprintf("ldx #%#x", i.K), ""
	case opLdMem:
		return fmt.Sprintf("ld M[%d]", i.K), ""
	case opLdxMem:
		return fmt.Sprintf("ldx M[%d]", i.K), ""
	case opLdxMsh:
		return fmt.Sprintf("ldx 4*([%d]&0xf)", i.K), ""
	case opSt:
		return fmt.Sprintf("st M[%d]", i.K), ""
	case opStx:
		return fmt.Sprintf("stx M[%d]", i.K), ""
	case opNeg:
		return "neg", ""
	case opJa:
		return "ja " + target(pc, uint64(i.K)), ""
	case opRetK:
		return "ret " + formatRet(i.K), ""
	case opRetA:
		return "ret a", ""
	case opRetX:
		return "ret x", ""
	case opTax:
		return "tax", ""
	case opTxa:
		return "txa", ""
	}
	operand := "x"
	if i.Op&SrcX == 0 {
		operand = fmt.Sprintf("#%#x", i.K)
	}
	if i.Class() == ClassAlu {
		return aluNames[i.operation()] + " " + operand, ""
	}
	return fmt.Sprintf("%s %s, %s, %s", jumpNames[i.operation()], operand,
		target(pc, uint64(i.Jt)), target(pc, uint64(i.Jf))), ""
}

// target writes the destination of a jump by off from pc: absolute, or
// relative when pc is negative.
func target(pc int, off uint64) string {
	if pc < 0 {
		return fmt.Sprintf("+%d", off)
	}
	return fmt.Sprint(uint64(pc) + 1 + off)
}

// fieldName says which part of struct seccomp_data a word load reads.
func fieldName(off uint32) string {
	switch {
	case off == OffsetNr:
		return "nr"
	case off == OffsetArch:
		return "arch"
	case off == OffsetIPLow:
		return "ip low"
	case off == OffsetIPHigh:
		return "ip high"
	case off >= OffsetArgs && off < SeccompDataSize && off%4 == 0:
		half := "low"
		if (off-OffsetArgs)%8 != 0 {
			half = "high"
		}
		return fmt.Sprintf("args[%d] %s", (off-OffsetArgs)/8, half)
	}
	return ""
}

// Operand fields an opcode reads.
const (
	usesK = 1 << iota
	usesJumps
)

// operands maps each opcode that has a mnemonic to the fields it reads.
var operands = func() map[uint16]int {
	m := map[uint16]int{
		opLdAbsW: usesK, opLdAbsH: usesK, opLdAbsB: usesK,
		opLdIndW: usesK, opLdIndH: usesK, opLdIndB: usesK,
		opLdLen: 0, opLdxLen: 0, opLdImm: usesK, opLdxImm: usesK,
		opLdMem: usesK, opLdxMem: usesK, opLdxMsh: usesK,
		opSt: usesK, opStx: usesK, opNeg: 0, opJa: usesK,
		opRetK: usesK, opRetA: 0, opRetX: 0, opTax: 0, opTxa: 0,
	}
	for op := range aluNames {
		m[ClassAlu|op|SrcK] = usesK
		m[ClassAlu|op|SrcX] = 0
	}
	for op := range jumpNames {
		m[ClassJmp|op|SrcK] = usesK | usesJumps
		m[ClassJmp|op|SrcX] = usesJumps
	}
	return m
}()

// canonical reports whether i has a mnemonic and leaves zero every field
// its opcode ignores, so that assembly text captures it whole.
func canonical(i Instruction) bool {
	uses, ok := operands[i.Op]
	return ok && (uses&usesK != 0 || i.K == 0) && (uses&usesJumps != 0 || i.Jt == 0 && i.Jf == 0)
}
