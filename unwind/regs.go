package unwind

import "fmt"

// Reg is an x86_64 register by its DWARF number (System V ABI, figure 3.36).
type Reg uint8

// The registers CFI can describe that matter to an unwind: the general
// registers and the return address column. Numbers above RA (vector and
// segment registers) are parsed and ignored.
const (
	RAX Reg = iota
	RDX
	RCX
	RBX
	RSI
	RDI
	RBP
	RSP
	R8
	R9
	R10
	R11
	R12
	R13
	R14
	R15
	// RA is the return address column, the caller's rip.
	RA
)

// NumRegs is the number of registers a Row and Regs hold.
const NumRegs = int(RA) + 1

var regNames = [NumRegs]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra"}

// String names the register as assemblers do ("rbx"), RA as "ra".
func (r Reg) String() string {
	if int(r) < NumRegs {
		return regNames[r]
	}
	return fmt.Sprintf("r%d", uint8(r))
}

// Regs are a thread's registers by DWARF number; Regs[RA] is its
// instruction pointer.
type Regs [NumRegs]uint64
