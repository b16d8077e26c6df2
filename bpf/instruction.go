// Package bpf owns classic BPF as seccomp uses it: the instruction type, a
// program builder with typed labels, the raw encoding the kernel reads, a
// disassembler, an interpreter over struct seccomp_data, and lossless
// bytecode optimizations.
package bpf

// Instruction is one cBPF instruction, laid out as the kernel's struct
// sock_filter.
type Instruction struct {
	Op uint16 // class | size | mode, or class | op | source
	Jt uint8  // jump offset when the condition holds
	Jf uint8  // jump offset when it does not
	K  uint32 // constant operand
}

// Instruction classes.
const (
	ClassLd   = 0x00
	ClassLdx  = 0x01
	ClassSt   = 0x02
	ClassStx  = 0x03
	ClassAlu  = 0x04
	ClassJmp  = 0x05
	ClassRet  = 0x06
	ClassMisc = 0x07
)

// Load sizes and modes.
const (
	SizeW   = 0x00
	SizeH   = 0x08
	SizeB   = 0x10
	ModeImm = 0x00
	ModeAbs = 0x20
	ModeInd = 0x40
	ModeMem = 0x60
	ModeLen = 0x80
	ModeMsh = 0xa0
)

// ALU and jump operations.
const (
	AluAdd = 0x00
	AluSub = 0x10
	AluMul = 0x20
	AluDiv = 0x30
	AluOr  = 0x40
	AluAnd = 0x50
	AluLsh = 0x60
	AluRsh = 0x70
	AluNeg = 0x80
	AluMod = 0x90
	AluXor = 0xa0

	JmpJa   = 0x00
	JmpJeq  = 0x10
	JmpJgt  = 0x20
	JmpJge  = 0x30
	JmpJset = 0x40
)

// Operand sources, return sources and misc operations.
const (
	SrcK = 0x00
	SrcX = 0x08

	RetK = 0x00
	RetX = 0x08
	RetA = 0x10

	MiscTax = 0x00
	MiscTxa = 0x80
)

// MemWords is the number of scratch memory words (M[0..15]).
const MemWords = 16

// MaxInstructions is the longest program the kernel accepts (BPF_MAXINSNS).
const MaxInstructions = 4096

// MaxCondJump is the farthest a conditional jump reaches (8-bit offsets).
const MaxCondJump = 255

// Class returns the instruction class.
func (i Instruction) Class() uint16 { return i.Op & 0x07 }

// IsConditionalJump reports whether i is a two-way jump.
func (i Instruction) IsConditionalJump() bool {
	return i.Class() == ClassJmp && i.Op&0xf0 != JmpJa
}

// IsReturn reports whether i ends the program.
func (i Instruction) IsReturn() bool { return i.Class() == ClassRet }

// LoadAbs loads the 32-bit word at offset off of the input into A.
func LoadAbs(off uint32) Instruction {
	return Instruction{Op: ClassLd | SizeW | ModeAbs, K: off}
}

// Ret returns the constant k.
func Ret(k uint32) Instruction { return Instruction{Op: ClassRet | RetK, K: k} }

// Jump is a conditional jump on A op k, with relative offsets.
func Jump(op uint16, k uint32, jt, jf uint8) Instruction {
	return Instruction{Op: ClassJmp | op | SrcK, Jt: jt, Jf: jf, K: k}
}

// Ja is an unconditional jump over k instructions.
func Ja(k uint32) Instruction { return Instruction{Op: ClassJmp | JmpJa, K: k} }

// Alu applies A = A op k.
func Alu(op uint16, k uint32) Instruction { return Instruction{Op: ClassAlu | op | SrcK, K: k} }
