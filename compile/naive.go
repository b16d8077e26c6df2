package compile

import (
	"sort"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Naive renders r the obvious way: a linear scan of syscall numbers, each
// rule's conditions checked in full with fresh loads. It shares no code with
// the optimizing compiler beyond the builder, which makes it a useful second
// opinion in differential tests, and it is what --no-optimize emits.
func Naive(r *policy.Resolved) ([]bpf.Instruction, error) {
	n := &naive{}
	byArch := map[syscalls.Arch]*policy.Table{}
	for _, t := range r.Tables {
		byArch[t.Arch] = t
	}
	bad := n.b.NewLabel("bad-arch")
	l64, l32 := n.b.NewLabel("x86_64"), n.b.NewLabel("i386")
	n.b.Add(bpf.LoadAbs(bpf.OffsetArch))
	t64, tx32, t32 := byArch[syscalls.X86_64], byArch[syscalls.X32], byArch[syscalls.I386]
	if t64 != nil || tx32 != nil {
		n.b.JumpIf(bpf.JmpJeq, syscalls.AuditArchX86_64, l64, bpf.Next)
	}
	if t32 != nil {
		n.b.JumpIf(bpf.JmpJeq, syscalls.AuditArchI386, l32, bpf.Next)
	}
	n.b.JumpTo(bad)
	if t64 != nil || tx32 != nil {
		n.b.Bind(l64)
		lx32 := n.b.NewLabel("x32")
		n.b.Add(bpf.LoadAbs(bpf.OffsetNr))
		n.b.JumpIf(bpf.JmpJge, syscalls.X32Bit, lx32, bpf.Next)
		n.tableOrBad(t64, bad)
		n.b.Bind(lx32)
		n.tableOrBad(tx32, bad)
	}
	if t32 != nil {
		n.b.Bind(l32)
		n.table(t32)
	}
	n.b.Bind(bad)
	n.b.Add(bpf.Ret(r.BadArch.Ret()))
	prog, err := n.b.Program()
	if err != nil {
		return nil, explainTooLong(err, r, len(prog))
	}
	return prog, nil
}

type naive struct{ b bpf.Builder }

func (n *naive) tableOrBad(t *policy.Table, bad bpf.Label) {
	if t == nil {
		n.b.JumpTo(bad)
		return
	}
	n.table(t)
}

func (n *naive) table(t *policy.Table) {
	for _, nr := range t.Numbers() {
		skip := n.b.NewLabel("next syscall")
		n.b.Add(bpf.LoadAbs(bpf.OffsetNr))
		n.b.JumpIf(bpf.JmpJeq, nr, bpf.Next, skip)
		n.syscall(t.Syscalls[nr], t.Default, t.Arch.Is32Bit())
		n.b.Bind(skip)
	}
	n.b.Add(bpf.Ret(t.Default.Ret()))
}

// syscall tries the branches in order of precedence; the first whose
// conditions all hold decides.
func (n *naive) syscall(branches []policy.Branch, def policy.Action, is32 bool) {
	sorted := append([]policy.Branch(nil), branches...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Action.Precedes(sorted[j].Action) })
	for _, br := range sorted {
		fail := n.b.NewLabel("next branch")
		for _, c := range br.Conds {
			n.cond(c, is32, fail)
		}
		n.b.Add(bpf.Ret(br.Action.Ret()))
		n.b.Bind(fail)
	}
	n.b.Add(bpf.Ret(def.Ret()))
}

// cond falls through when c holds and jumps to fail otherwise.
func (n *naive) cond(c policy.Cond, is32 bool, fail bpf.Label) {
	lo, hi := bpf.ArgLow(int(c.Arg)), bpf.ArgHigh(int(c.Arg))
	vl, vh := uint32(c.Value), uint32(c.Value>>32)
	if is32 {
		n.b.Add(bpf.LoadAbs(lo))
		n.half(c.Op, vl, uint32(c.Mask), fail)
		return
	}
	ok := n.b.NewLabel("condition holds")
	switch c.Op {
	case policy.Eq:
		n.b.Add(bpf.LoadAbs(hi))
		n.b.JumpIf(bpf.JmpJeq, vh, bpf.Next, fail)
		n.b.Add(bpf.LoadAbs(lo))
		n.b.JumpIf(bpf.JmpJeq, vl, bpf.Next, fail)
	case policy.Ne:
		n.b.Add(bpf.LoadAbs(hi))
		n.b.JumpIf(bpf.JmpJeq, vh, bpf.Next, ok)
		n.b.Add(bpf.LoadAbs(lo))
		n.b.JumpIf(bpf.JmpJeq, vl, fail, bpf.Next)
	case policy.MaskedEq:
		n.b.Add(bpf.LoadAbs(hi))
		n.half(c.Op, vh, uint32(c.Mask>>32), fail)
		n.b.Add(bpf.LoadAbs(lo))
		n.half(c.Op, vl, uint32(c.Mask), fail)
	case policy.Gt, policy.Ge:
		// Greater high half: holds; smaller: fails; equal: the low half decides.
		n.b.Add(bpf.LoadAbs(hi))
		n.b.JumpIf(bpf.JmpJgt, vh, ok, bpf.Next)
		n.b.JumpIf(bpf.JmpJeq, vh, bpf.Next, fail)
		n.b.Add(bpf.LoadAbs(lo))
		n.half(c.Op, vl, 0, fail)
	case policy.Lt, policy.Le:
		n.b.Add(bpf.LoadAbs(hi))
		n.b.JumpIf(bpf.JmpJgt, vh, fail, bpf.Next)
		n.b.JumpIf(bpf.JmpJeq, vh, bpf.Next, ok)
		n.b.Add(bpf.LoadAbs(lo))
		n.half(c.Op, vl, 0, fail)
	}
	n.b.Bind(ok)
}

// half compares A with k (or A & mask with k) and jumps to fail when the
// comparison does not hold.
func (n *naive) half(op policy.Op, k, mask uint32, fail bpf.Label) {
	switch op {
	case policy.Eq:
		n.b.JumpIf(bpf.JmpJeq, k, bpf.Next, fail)
	case policy.Ne:
		n.b.JumpIf(bpf.JmpJeq, k, fail, bpf.Next)
	case policy.Gt:
		n.b.JumpIf(bpf.JmpJgt, k, bpf.Next, fail)
	case policy.Ge:
		n.b.JumpIf(bpf.JmpJge, k, bpf.Next, fail)
	case policy.Lt:
		n.b.JumpIf(bpf.JmpJge, k, fail, bpf.Next)
	case policy.Le:
		n.b.JumpIf(bpf.JmpJgt, k, fail, bpf.Next)
	case policy.MaskedEq:
		n.b.Add(bpf.Alu(bpf.AluAnd, mask))
		n.b.JumpIf(bpf.JmpJeq, k, bpf.Next, fail)
	}
}
