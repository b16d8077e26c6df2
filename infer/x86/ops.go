package x86

import "golang.org/x/arch/x86/x86asm"

// implicitWrites are the registers an instruction writes without naming
// them.
func implicitWrites(in *op) []int {
	switch in.Op {
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV, x86asm.RDTSC, x86asm.XGETBV, x86asm.RDMSR, x86asm.RDPMC:
		return []int{rax, rdx}
	case x86asm.IMUL:
		if in.Args[1] == nil {
			return []int{rax, rdx}
		}
	case x86asm.RDTSCP:
		return []int{rax, rdx, rcx}
	case x86asm.CPUID:
		return []int{rax, rbx, rcx, rdx}
	case x86asm.CWD, x86asm.CDQ, x86asm.CQO:
		return []int{rdx}
	case x86asm.CBW, x86asm.CWDE, x86asm.CDQE, x86asm.LAHF, x86asm.XLATB, x86asm.CMPXCHG:
		return []int{rax}
	case x86asm.CMPXCHG8B, x86asm.CMPXCHG16B:
		return []int{rax, rdx}
	case x86asm.LODSB, x86asm.LODSW, x86asm.LODSD, x86asm.LODSQ:
		return []int{rax, rsi, rcx}
	case x86asm.STOSB, x86asm.STOSW, x86asm.STOSD, x86asm.STOSQ, x86asm.SCASB, x86asm.SCASW, x86asm.SCASD, x86asm.SCASQ:
		return []int{rdi, rcx}
	case x86asm.MOVSB, x86asm.MOVSW, x86asm.MOVSD, x86asm.MOVSQ, x86asm.CMPSB, x86asm.CMPSW, x86asm.CMPSD, x86asm.CMPSQ:
		return []int{rsi, rdi, rcx}
	case x86asm.INSB, x86asm.INSW, x86asm.INSD:
		return []int{rdi, rcx}
	case x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD:
		return []int{rsi, rcx}
	case x86asm.IN:
		return []int{rax}
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return []int{rcx}
	case x86asm.ENTER, x86asm.LEAVE:
		return []int{rbp, rsp}
	case x86asm.SYSCALL:
		return []int{rax, rcx, r11}
	case x86asm.SYSENTER, x86asm.INT:
		return []int{rax}
	case x86asm.PUSHF, x86asm.PUSHFQ, x86asm.POPF, x86asm.POPFQ:
		return []int{rsp}
	}
	return nil
}

// readsOnly are instructions that write none of their operands.
var readsOnly = map[x86asm.Op]bool{
	x86asm.CMP: true, x86asm.TEST: true, x86asm.BT: true, x86asm.PUSH: true,
	x86asm.NOP: true, x86asm.PAUSE: true, x86asm.PREFETCHNTA: true, x86asm.PREFETCHT0: true,
	x86asm.PREFETCHT1: true, x86asm.PREFETCHT2: true, x86asm.PREFETCHW: true,
	x86asm.UCOMISD: true, x86asm.UCOMISS: true, x86asm.COMISD: true, x86asm.COMISS: true,
	x86asm.PTEST: true, x86asm.LFENCE: true, x86asm.MFENCE: true, x86asm.SFENCE: true,
	x86asm.JMP: true, x86asm.CALL: true, x86asm.RET: true, x86asm.CLFLUSH: true,
	x86asm.OUT: true, x86asm.WRMSR: true,
}

// writesSecond are instructions that write their second register
// operand too.
var writesSecond = map[x86asm.Op]bool{
	x86asm.XCHG: true, x86asm.XADD: true, x86asm.MULX: true,
}

// isCmov says whether op is a conditional move.
func isCmov(op x86asm.Op) bool {
	switch op {
	case x86asm.CMOVA, x86asm.CMOVAE, x86asm.CMOVB, x86asm.CMOVBE, x86asm.CMOVE, x86asm.CMOVG,
		x86asm.CMOVGE, x86asm.CMOVL, x86asm.CMOVLE, x86asm.CMOVNE, x86asm.CMOVNO, x86asm.CMOVNP,
		x86asm.CMOVNS, x86asm.CMOVO, x86asm.CMOVP, x86asm.CMOVS:
		return true
	}
	return false
}

// isSetcc says whether op sets a byte from a condition.
func isSetcc(op x86asm.Op) bool {
	switch op {
	case x86asm.SETA, x86asm.SETAE, x86asm.SETB, x86asm.SETBE, x86asm.SETE, x86asm.SETG,
		x86asm.SETGE, x86asm.SETL, x86asm.SETLE, x86asm.SETNE, x86asm.SETNO, x86asm.SETNP,
		x86asm.SETNS, x86asm.SETO, x86asm.SETP, x86asm.SETS:
		return true
	}
	return false
}
