package bpf

import (
	"errors"
	"fmt"
)

// Label names a place in a program under construction. Labels are typed
// indices, not strings, so that resolution order is the order of creation.
type Label int

// Next is the label of the instruction that follows, for a branch that falls
// through.
const Next Label = -1

// ErrTooLong is returned for programs longer than MaxInstructions.
var ErrTooLong = errors.New("program exceeds the kernel's limit of 4096 instructions")

type label struct {
	name  string
	at    int  // instruction index, -1 until bound
	twice bool // bound more than once, which Program reports
}

// pending is an instruction whose jump targets may still be labels.
type pending struct {
	ins      Instruction
	symbolic bool  // added by JumpIf or JumpTo, so targets are labels
	jt, jf   Label // for conditional jumps; Next means fall through
	ja       Label // for unconditional jumps
}

// Builder assembles a program with symbolic jump targets. Conditional jumps
// whose target lies beyond MaxCondJump get a trampoline, so callers never
// reason about distances.
type Builder struct {
	insns  []pending
	labels []label
}

// NewLabel creates an unbound label. The name appears in errors only.
func (b *Builder) NewLabel(name string) Label {
	b.labels = append(b.labels, label{name: name, at: -1})
	return Label(len(b.labels) - 1)
}

// Bind places l at the next instruction to be added. A label is placed
// once; Program reports a second Bind.
func (b *Builder) Bind(l Label) {
	b.labels[l].twice = b.labels[l].at >= 0
	b.labels[l].at = len(b.insns)
}

// Bound reports whether l has been placed.
func (b *Builder) Bound(l Label) bool { return b.labels[l].at >= 0 }

// Len is the number of instructions added so far.
func (b *Builder) Len() int { return len(b.insns) }

// Add appends an instruction that does not jump; Program refuses a jump
// added this way, since its offsets could not follow inserted trampolines.
func (b *Builder) Add(ins Instruction) {
	b.insns = append(b.insns, pending{ins: ins, jt: Next, jf: Next, ja: Next})
}

// JumpIf appends a conditional jump on A op k.
func (b *Builder) JumpIf(op uint16, k uint32, jt, jf Label) {
	b.insns = append(b.insns, pending{ins: Jump(op, k, 0, 0), symbolic: true, jt: jt, jf: jf, ja: Next})
}

// JumpTo appends an unconditional jump.
func (b *Builder) JumpTo(l Label) {
	b.insns = append(b.insns, pending{ins: Ja(0), symbolic: true, jt: Next, jf: Next, ja: l})
}

// Program resolves every label and returns the instructions. Far conditional
// jumps are routed through inserted unconditional jumps.
func (b *Builder) Program() ([]Instruction, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	insns := append([]pending(nil), b.insns...)
	labels := append([]label(nil), b.labels...)
	for {
		far, err := firstFarJump(insns, labels)
		if err != nil {
			return nil, err
		}
		if far < 0 {
			break
		}
		insns, labels = addTrampolines(insns, labels, far)
	}
	out := make([]Instruction, len(insns))
	for i, p := range insns {
		ins := p.ins
		if ins.IsConditionalJump() {
			ins.Jt = uint8(offset(i, p.jt, labels))
			ins.Jf = uint8(offset(i, p.jf, labels))
		} else if p.symbolic {
			ins.K = uint32(offset(i, p.ja, labels))
		}
		out[i] = ins
	}
	if len(out) > MaxInstructions {
		return out, fmt.Errorf("bpf: %w: %d instructions", ErrTooLong, len(out))
	}
	return out, nil
}

// check reports the mistakes that do not depend on where labels end up:
// jumps added with Add, labels placed twice, and a last instruction that
// lets execution run off the end.
func (b *Builder) check() error {
	for i, p := range b.insns {
		if !p.symbolic && p.ins.Class() == ClassJmp {
			return fmt.Errorf("bpf: instruction %d is a jump added with Add; use JumpIf or JumpTo", i)
		}
	}
	for _, l := range b.labels {
		if l.twice {
			return fmt.Errorf("bpf: label %q is placed twice", l.name)
		}
	}
	if n := len(b.insns); n > 0 && fallsOff(b.insns[n-1]) {
		return fmt.Errorf("bpf: instruction %d, the last, lets execution run off the end", n-1)
	}
	return nil
}

// fallsOff reports whether execution can continue past p to whatever is
// next, which for the last instruction is nothing.
func fallsOff(p pending) bool {
	switch {
	case p.ins.IsReturn():
		return false
	case p.ins.IsConditionalJump():
		return p.jt == Next || p.jf == Next
	case p.ins.Class() == ClassJmp:
		return p.ja == Next
	}
	return true
}

// offset is the relative jump from instruction i to label l.
func offset(i int, l Label, labels []label) int {
	if l == Next {
		return 0
	}
	return labels[l].at - i - 1
}

// firstFarJump checks every target and returns the index of the first
// conditional jump that cannot reach its target, or -1.
func firstFarJump(insns []pending, labels []label) (int, error) {
	for i, p := range insns {
		targets := []Label{p.ja}
		if p.ins.IsConditionalJump() {
			targets = []Label{p.jt, p.jf}
		}
		for _, t := range targets {
			if t == Next {
				continue
			}
			l := labels[t]
			if l.at < 0 {
				return 0, fmt.Errorf("bpf: instruction %d jumps to label %q, which is never placed", i, l.name)
			}
			if l.at <= i {
				return 0, fmt.Errorf("bpf: instruction %d jumps backward to label %q at %d", i, l.name, l.at)
			}
			if l.at >= len(insns) {
				return 0, fmt.Errorf("bpf: label %q is placed after the last instruction", l.name)
			}
		}
		if p.ins.IsConditionalJump() && (offset(i, p.jt, labels) > MaxCondJump || offset(i, p.jf, labels) > MaxCondJump) {
			return i, nil
		}
	}
	return -1, nil
}

// addTrampolines inserts an unconditional jump after instruction i for each
// of its branches that is too far, one for both when they go to the same
// label, and shifts the labels behind it.
func addTrampolines(insns []pending, labels []label, i int) ([]pending, []label) {
	p := insns[i]
	farT := offset(i, p.jt, labels) > MaxCondJump
	farF := offset(i, p.jf, labels) > MaxCondJump
	shared := farT && farF && p.jt == p.jf
	farF = farF && !shared
	// A fall-through branch must keep reaching the old next instruction,
	// not the trampolines placed in front of it.
	for _, t := range []*Label{&p.jt, &p.jf} {
		if *t == Next {
			labels = append(labels, label{name: fmt.Sprintf("after %d", i), at: i + 1})
			*t = Label(len(labels) - 1)
		}
	}
	var tramps []pending
	for _, far := range []struct {
		is     bool
		target *Label
	}{{farT, &p.jt}, {farF, &p.jf}} {
		if !far.is {
			continue
		}
		tramps = append(tramps, pending{ins: Ja(0), symbolic: true, jt: Next, jf: Next, ja: *far.target})
		labels = append(labels, label{name: fmt.Sprintf("trampoline %d.%d", i, len(tramps)), at: -1})
		*far.target = Label(len(labels) - 1)
	}
	if shared {
		p.jf = p.jt
	}
	for l := range labels {
		if labels[l].at > i {
			labels[l].at += len(tramps)
		}
	}
	for k := range tramps {
		labels[len(labels)-len(tramps)+k].at = i + 1 + k
	}
	insns[i] = p
	rest := append(tramps, insns[i+1:]...)
	return append(insns[:i+1:i+1], rest...), labels
}
