package bpf

import (
	"errors"
	"fmt"
)

// ErrEmpty is returned for a program without instructions.
var ErrEmpty = errors.New("bpf: empty program")

// ValidationError is an instruction the kernel would refuse, and why.
type ValidationError struct {
	Index       int         // where the instruction is in the program
	Instruction Instruction // the instruction
	Problem     string      // what the kernel objects to
}

// Error names the instruction and the problem.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("bpf: instruction %d (%v): %s", e.Index, e.Instruction, e.Problem)
}

// Validate applies the checks the kernel makes before it installs a seccomp
// filter: those of bpf_check_classic in net/core/filter.c and of
// seccomp_check_filter in kernel/seccomp.c. A program that passes is one the
// kernel accepts, and one Run executes without error.
func Validate(prog []Instruction) error {
	if len(prog) == 0 {
		return ErrEmpty
	}
	if len(prog) > MaxInstructions {
		return fmt.Errorf("bpf: %w: %d instructions", ErrTooLong, len(prog))
	}
	for pc := range prog {
		if problem := check(prog, pc); problem != "" {
			return &ValidationError{Index: pc, Instruction: prog[pc], Problem: problem}
		}
	}
	if last := len(prog) - 1; !prog[last].IsReturn() {
		return &ValidationError{Index: last, Instruction: prog[last], Problem: "the last instruction must be a return"}
	}
	return checkScratch(prog)
}

// check returns what the kernel objects to in instruction pc, or "".
func check(prog []Instruction, pc int) string {
	ins := prog[pc]
	if !seccompOps[ins.Op] {
		return fmt.Sprintf("opcode %#02x is not allowed in seccomp filters", ins.Op)
	}
	switch {
	case ins.Op == opLdAbsW && (ins.K >= SeccompDataSize || ins.K%4 != 0):
		return fmt.Sprintf("offset %d is not an aligned word of struct seccomp_data", ins.K)
	case ins.Op == ClassAlu|AluDiv|SrcK && ins.K == 0:
		return "divides by the constant 0"
	case (ins.Op == ClassAlu|AluLsh|SrcK || ins.Op == ClassAlu|AluRsh|SrcK) && ins.K >= 32:
		return fmt.Sprintf("shifts by %d; the limit is 31", ins.K)
	case usesScratch(ins) && ins.K >= MemWords:
		return fmt.Sprintf("scratch word M[%d] does not exist; there are %d", ins.K, MemWords)
	case ins.Op == opJa && uint64(ins.K) >= uint64(len(prog)-pc-1):
		return fmt.Sprintf("jumps to %d, past the last instruction", uint64(pc)+1+uint64(ins.K))
	case ins.IsConditionalJump() && pc+1+int(max(ins.Jt, ins.Jf)) >= len(prog):
		return fmt.Sprintf("jumps to %d, past the last instruction", pc+1+int(max(ins.Jt, ins.Jf)))
	}
	return ""
}

// usesScratch reports whether ins reads or writes scratch memory.
func usesScratch(ins Instruction) bool {
	switch ins.Op {
	case opLdMem, opLdxMem, opSt, opStx:
		return true
	}
	return false
}

// checkScratch refuses a read of a scratch word that some path reaches
// before any store to it, the way check_load_and_stores in
// net/core/filter.c does: in one pass in program order, where a jump hands
// its targets the words stored so far. A return is not a jump there: the
// instruction after it keeps only the words stored both before the return
// and on every jump to it. That quirk makes the kernel stricter than the
// paths require, and Validate must refuse what the kernel refuses, so it
// is copied, not improved on.
func checkScratch(prog []Instruction) error {
	stored := make([]uint16, len(prog))
	for i := range stored {
		stored[i] = 0xffff
	}
	var valid uint16
	for pc, ins := range prog {
		valid &= stored[pc]
		switch {
		case ins.Op == opSt || ins.Op == opStx:
			valid |= 1 << ins.K
		case ins.Op == opLdMem || ins.Op == opLdxMem:
			if valid&(1<<ins.K) == 0 {
				return &ValidationError{Index: pc, Instruction: ins, Problem: fmt.Sprintf("reads M[%d], which some path reaches before storing it", ins.K)}
			}
		case ins.Op == opJa:
			stored[pc+1+int(ins.K)] &= valid
			valid = 0xffff
		case ins.IsConditionalJump():
			stored[pc+1+int(ins.Jt)] &= valid
			stored[pc+1+int(ins.Jf)] &= valid
			valid = 0xffff
		}
	}
	return nil
}
