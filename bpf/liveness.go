package bpf

// Registers, as bits of a set.
const (
	regA uint8 = 1 << iota
	regX
)

// effects says which registers an instruction that Validate accepts reads
// and writes, and whether it does anything else that cannot be dropped:
// storing to scratch memory, ending the program or jumping.
func effects(ins Instruction) (reads, writes uint8, other bool) {
	switch ins.Class() {
	case ClassLd:
		return 0, regA, false
	case ClassLdx:
		return 0, regX, false
	case ClassSt:
		return regA, 0, true
	case ClassStx:
		return regX, 0, true
	case ClassAlu:
		if ins.Op&SrcX == 0 || ins.Op == opNeg {
			return regA, regA, false
		}
		// Division by an X of zero ends the program.
		div := ins.operation() == AluDiv || ins.operation() == AluMod
		return regA | regX, regA, div
	case ClassJmp:
		if ins.Op == opJa {
			return 0, 0, true
		}
		if ins.Op&SrcX != 0 {
			return regA | regX, 0, true
		}
		return regA, 0, true
	case ClassRet:
		if ins.Op == opRetA {
			return regA, 0, true
		}
		return 0, 0, true
	}
	if ins.Op == opTax {
		return regA, regX, false
	}
	return regX, regA, false
}

// deadWrites marks the instructions whose only effect is to set a register
// that every path overwrites or abandons before reading it. Jumps only go
// forward, so one pass in reverse program order sees every successor of an
// instruction before the instruction itself.
func deadWrites(prog []Instruction) []bool {
	dead := make([]bool, len(prog))
	live := make([]uint8, len(prog))
	for pc := len(prog) - 1; pc >= 0; pc-- {
		ins := prog[pc]
		var out uint8
		for _, t := range successors(ins, pc) {
			if t >= 0 {
				out |= live[t]
			}
		}
		reads, writes, other := effects(ins)
		if !other && writes&out == 0 {
			dead[pc], live[pc] = true, out
			continue
		}
		live[pc] = out&^writes | reads
	}
	return dead
}
