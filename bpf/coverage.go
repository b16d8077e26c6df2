package bpf

import "fmt"

// Coverage accumulates, over runs of one program with RunCovered, which
// instructions executed and which ways each conditional jump went, so that
// a fuzzer can tell when its inputs have exercised every line and branch.
// The zero Coverage is empty and ready.
type Coverage struct {
	marks []uint8
}

// What Coverage records of an instruction.
const (
	markRun uint8 = 1 << iota
	markTrue
	markFalse
)

// fit makes room for a program of n instructions.
func (c *Coverage) fit(n int) {
	if len(c.marks) < n {
		c.marks = append(c.marks, make([]uint8, n-len(c.marks))...)
	}
}

// Missing describes, in program order, each instruction of prog that never
// executed and each side of a conditional jump never taken; it is empty
// when coverage is complete.
func (c *Coverage) Missing(prog []Instruction) []string {
	var missing []string
	for pc, ins := range prog {
		var mark uint8
		if pc < len(c.marks) {
			mark = c.marks[pc]
		}
		text, _ := render(ins, pc)
		switch {
		case mark&markRun == 0:
			missing = append(missing, fmt.Sprintf("%04d: %s: never executed", pc, text))
		case ins.IsConditionalJump():
			for _, side := range []struct {
				mark uint8
				name string
				off  uint8
			}{{markTrue, "true", ins.Jt}, {markFalse, "false", ins.Jf}} {
				if mark&side.mark == 0 {
					missing = append(missing, fmt.Sprintf("%04d: %s: %s branch (to %d) never taken", pc, text, side.name, pc+1+int(side.off)))
				}
			}
		}
	}
	return missing
}
