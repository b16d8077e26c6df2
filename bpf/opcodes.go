package bpf

// Whole opcodes, named once so that the validator, the interpreter, the
// disassembler and the optimizer agree on them.
const (
	opLdAbsW = ClassLd | SizeW | ModeAbs
	opLdAbsH = ClassLd | SizeH | ModeAbs
	opLdAbsB = ClassLd | SizeB | ModeAbs
	opLdIndW = ClassLd | SizeW | ModeInd
	opLdIndH = ClassLd | SizeH | ModeInd
	opLdIndB = ClassLd | SizeB | ModeInd
	opLdLen  = ClassLd | SizeW | ModeLen
	opLdImm  = ClassLd | ModeImm
	opLdMem  = ClassLd | ModeMem
	opLdxLen = ClassLdx | SizeW | ModeLen
	opLdxImm = ClassLdx | ModeImm
	opLdxMem = ClassLdx | ModeMem
	opLdxMsh = ClassLdx | SizeB | ModeMsh
	opSt     = ClassSt
	opStx    = ClassStx
	opNeg    = ClassAlu | AluNeg
	opJa     = ClassJmp | JmpJa
	opRetK   = ClassRet | RetK
	opRetA   = ClassRet | RetA
	opRetX   = ClassRet | RetX
	opTax    = ClassMisc | MiscTax
	opTxa    = ClassMisc | MiscTxa
)

// aluOps and jumpOps list the two-operand operations, each of which exists
// with a constant (SrcK) and with X (SrcX) as its operand.
var (
	aluOps  = []uint16{AluAdd, AluSub, AluMul, AluDiv, AluOr, AluAnd, AluLsh, AluRsh, AluMod, AluXor}
	jumpOps = []uint16{JmpJeq, JmpJgt, JmpJge, JmpJset}
)

// seccompOps is every opcode that seccomp_check_filter in kernel/seccomp.c
// lets through, each of which bpf_check_classic also accepts. Notably absent:
// BPF_MOD (seccomp predates it), byte and half-word loads, indirect loads,
// BPF_MSH and BPF_RET|BPF_X.
var seccompOps = func() map[uint16]bool {
	ops := map[uint16]bool{
		opLdAbsW: true, opLdLen: true, opLdxLen: true,
		opLdImm: true, opLdxImm: true, opLdMem: true, opLdxMem: true,
		opSt: true, opStx: true, opNeg: true, opJa: true,
		opRetK: true, opRetA: true, opTax: true, opTxa: true,
	}
	for _, op := range aluOps {
		if op != AluMod {
			ops[ClassAlu|op|SrcK] = true
			ops[ClassAlu|op|SrcX] = true
		}
	}
	for _, op := range jumpOps {
		ops[ClassJmp|op|SrcK] = true
		ops[ClassJmp|op|SrcX] = true
	}
	return ops
}()

// operation extracts the ALU or jump operation of i.
func (i Instruction) operation() uint16 { return i.Op & 0xf0 }
