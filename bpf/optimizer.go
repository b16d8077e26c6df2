package bpf

import (
	"slices"
	"sort"
)

// pass is one lossless rewrite. It returns a new program and whether it
// changed anything; it never modifies its input.
type pass func(prog []Instruction) ([]Instruction, bool)

// passes feed on each other's results, so Optimize repeats them all until
// none applies. Each pass that applies makes progress in an order that
// cannot descend forever: the length of the program first, then the number
// of conditional jumps, of unconditional jumps, of reachable returns, and
// last how far forward jumps land. So the repetition ends.
var passes = []pass{
	removeDeadCode,
	threadJumps,
	simplifyJumps,
	useAnalysis,
	removeDeadWrites,
	mergeReturns,
}

// Optimize rewrites a program that Validate accepts into one that Validate
// accepts too, that returns the same value on every input, is no longer,
// executes no more instructions on any input, and that the kernel's
// verdict cache can cache wherever it could cache the original. A program
// that Validate refuses comes back unchanged, as a copy.
func Optimize(prog []Instruction) []Instruction {
	out := slices.Clone(prog)
	if Validate(out) != nil {
		return out
	}
	for changed := true; changed; {
		changed = false
		for _, p := range passes {
			next, ok := p(out)
			// The kernel checks scratch memory in layout order rather
			// than along paths (see checkScratch), so a rewrite that is
			// sound can still make it refuse the program.
			if ok && Validate(next) == nil {
				out, changed = next, true
			}
		}
	}
	return out
}

// removeDeadCode drops the instructions no path reaches.
func removeDeadCode(prog []Instruction) ([]Instruction, bool) {
	dead := unreachable(prog)
	if !slices.Contains(dead, true) {
		return prog, false
	}
	return remove(prog, dead), true
}

// unreachable marks the instructions no path reaches. Jumps only go
// forward, so one pass in program order finds them.
func unreachable(prog []Instruction) []bool {
	dead := make([]bool, len(prog))
	for pc := range dead {
		dead[pc] = pc > 0
	}
	for pc, ins := range prog {
		if dead[pc] {
			continue
		}
		for _, t := range successors(ins, pc) {
			if t >= 0 {
				dead[t] = false
			}
		}
	}
	return dead
}

// threadJumps points each jump that lands on an unconditional jump at the
// end of the chain, or, for a conditional jump, as far along it as eight
// bits reach.
func threadJumps(prog []Instruction) ([]Instruction, bool) {
	out := slices.Clone(prog)
	changed := false
	for pc, ins := range out {
		switch {
		case ins.Op == opJa:
			t := follow(out, pc+1+int(ins.K), len(out))
			ins.K = uint32(t - pc - 1)
		case ins.IsConditionalJump():
			limit := pc + 1 + MaxCondJump
			ins.Jt = uint8(follow(out, pc+1+int(ins.Jt), limit) - pc - 1)
			ins.Jf = uint8(follow(out, pc+1+int(ins.Jf), limit) - pc - 1)
		}
		if ins != out[pc] {
			out[pc], changed = ins, true
		}
	}
	return out, changed
}

// follow walks the chain of unconditional jumps that starts at t and
// returns the farthest instruction on it not beyond limit.
func follow(prog []Instruction, t, limit int) int {
	for prog[t].Op == opJa {
		next := t + 1 + int(prog[t].K)
		if next > limit {
			break
		}
		t = next
	}
	return t
}

// simplifyJumps replaces a conditional jump whose sides agree, going to
// one place or to equal returns, by an unconditional jump or by that
// return; an unconditional jump to a return by the return itself; and
// drops jumps to the next instruction.
func simplifyJumps(prog []Instruction) ([]Instruction, bool) {
	out := slices.Clone(prog)
	nops := make([]bool, len(out))
	changed := false
	for pc, ins := range out {
		switch {
		case ins.Op == opJa && ins.K == 0:
			nops[pc], changed = true, true
		case ins.Op == opJa && out[pc+1+int(ins.K)].IsReturn():
			out[pc], changed = out[pc+1+int(ins.K)], true
		case ins.IsConditionalJump() && ins.Jt == ins.Jf:
			out[pc], changed = Ja(uint32(ins.Jt)), true
		case ins.IsConditionalJump() && out[pc+1+int(ins.Jt)].IsReturn() && out[pc+1+int(ins.Jt)] == out[pc+1+int(ins.Jf)]:
			out[pc], changed = out[pc+1+int(ins.Jt)], true
		}
	}
	return remove(out, nops), changed
}

// useAnalysis drops the loads that reload what A already holds and turns
// the conditional jumps that always go the same way into unconditional
// ones.
func useAnalysis(prog []Instruction) ([]Instruction, bool) {
	a := analyze(prog)
	out := slices.Clone(prog)
	changed := slices.Contains(a.redundant, true)
	for pc, o := range a.outcomes {
		switch o {
		case alwaysTrue:
			out[pc] = Ja(uint32(out[pc].Jt))
		case alwaysFalse:
			out[pc] = Ja(uint32(out[pc].Jf))
		default:
			continue
		}
		changed = true
	}
	return remove(out, a.redundant), changed
}

// removeDeadWrites drops the instructions that only set a register no path
// reads afterwards, like a load whose value the next load replaces.
func removeDeadWrites(prog []Instruction) ([]Instruction, bool) {
	dead := deadWrites(prog)
	if !slices.Contains(dead, true) {
		return prog, false
	}
	return remove(prog, dead), true
}

// mergeReturns removes returns that are duplicates of other returns by
// pointing the jumps that reach one at an equal return further on, when
// every such jump can be moved and nothing falls through into it. The
// returns it empties become dead code.
func mergeReturns(prog []Instruction) ([]Instruction, bool) {
	out := slices.Clone(prog)
	// Dead returns are no substitutes: removing them could be refused
	// (see Optimize), and then jumps would move back and forth.
	gone := unreachable(out)
	refs := referrers(out, gone)
	at := map[Instruction][]int{}
	for pc, ins := range out {
		if ins.IsReturn() {
			at[ins] = append(at[ins], pc)
		}
	}
	changed := false
	for r, ins := range out {
		if !ins.IsReturn() || gone[r] || len(refs[r]) == 0 || fallsInto(out, r) {
			continue
		}
		moves := make([]int, len(refs[r]))
		ok := true
		for i, ref := range refs[r] {
			moves[i] = substitute(out, at[ins], gone, r, ref)
			ok = ok && moves[i] >= 0
		}
		if !ok {
			continue
		}
		for i, ref := range refs[r] {
			retarget(out, ref, moves[i])
			refs[moves[i]] = append(refs[moves[i]], ref)
		}
		refs[r], gone[r], changed = nil, true, true
	}
	return out, changed
}

// ref is one side of a jump: the instruction and which target.
type ref struct {
	pc    int
	whenF bool // the false side of a conditional jump
}

// referrers lists, for each instruction, the jumps that land on it, leaving
// out the dead ones.
func referrers(prog []Instruction, dead []bool) [][]ref {
	refs := make([][]ref, len(prog))
	for pc, ins := range prog {
		switch {
		case dead[pc]:
		case ins.Op == opJa:
			t := pc + 1 + int(ins.K)
			refs[t] = append(refs[t], ref{pc: pc})
		case ins.IsConditionalJump():
			t, f := pc+1+int(ins.Jt), pc+1+int(ins.Jf)
			refs[t] = append(refs[t], ref{pc: pc})
			refs[f] = append(refs[f], ref{pc: pc, whenF: true})
		}
	}
	return refs
}

// fallsInto reports whether the instruction before pc continues into it
// without jumping.
func fallsInto(prog []Instruction, pc int) bool {
	if pc == 0 {
		return true
	}
	prev := prog[pc-1]
	return !prev.IsReturn() && prev.Class() != ClassJmp
}

// substitute finds, among the sorted places of a return equal to the one
// at r, the farthest that ref can jump to instead, or returns -1. The
// farthest is chosen so that jumps gather on the returns that outlive the
// others.
func substitute(prog []Instruction, places []int, gone []bool, r int, ref ref) int {
	limit := len(prog) - 1
	if prog[ref.pc].IsConditionalJump() {
		limit = ref.pc + 1 + MaxCondJump
	}
	i := sort.SearchInts(places, limit+1)
	for i--; i >= 0 && places[i] > ref.pc; i-- {
		if p := places[i]; p != r && !gone[p] {
			return p
		}
	}
	return -1
}

// retarget points one side of a jump at t.
func retarget(prog []Instruction, ref ref, t int) {
	off := t - ref.pc - 1
	switch ins := &prog[ref.pc]; {
	case ins.Op == opJa:
		ins.K = uint32(off)
	case ref.whenF:
		ins.Jf = uint8(off)
	default:
		ins.Jt = uint8(off)
	}
}

// successors lists where execution can go after instruction pc; -1 pads.
func successors(ins Instruction, pc int) [2]int {
	switch {
	case ins.IsReturn():
		return [2]int{-1, -1}
	case ins.Op == opJa:
		return [2]int{pc + 1 + int(ins.K), -1}
	case ins.IsConditionalJump():
		return [2]int{pc + 1 + int(ins.Jt), pc + 1 + int(ins.Jf)}
	}
	return [2]int{pc + 1, -1}
}

// remove deletes the marked instructions, which must be unreachable or do
// nothing, and fixes every jump: one that landed on a deleted instruction
// lands on the next kept one. Offsets only shrink, so they still fit.
func remove(prog []Instruction, del []bool) []Instruction {
	// kept[i] counts the instructions kept before i: the new index of the
	// first kept instruction at or after i.
	kept := make([]int, len(prog)+1)
	n := 0
	for i := range prog {
		kept[i] = n
		if !del[i] {
			n++
		}
	}
	kept[len(prog)] = n
	if n == len(prog) {
		return prog
	}
	out := make([]Instruction, 0, n)
	for pc, ins := range prog {
		if del[pc] {
			continue
		}
		at := kept[pc]
		switch {
		case ins.Op == opJa:
			ins.K = uint32(kept[pc+1+int(ins.K)] - at - 1)
		case ins.IsConditionalJump():
			ins.Jt = uint8(kept[pc+1+int(ins.Jt)] - at - 1)
			ins.Jf = uint8(kept[pc+1+int(ins.Jf)] - at - 1)
		}
		out = append(out, ins)
	}
	return out
}
