package policy

import "github.com/syscell/syscell/syscalls"

// Verdict decides a call to nr with args straight from the rules: of the
// branches whose conditions all hold, the one whose action takes precedence
// wins (the kernel's order between filters); if none holds, the default.
func (t *Table) Verdict(nr uint32, args [MaxArgs]uint64) Action {
	width := 64
	if t.Arch.Is32Bit() {
		width = 32
	}
	var best *Action
	for i, b := range t.Syscalls[nr] {
		if !allHold(b.Conds, args, width) {
			continue
		}
		if best == nil || b.Action.Precedes(*best) {
			best = &t.Syscalls[nr][i].Action
		}
	}
	if best == nil {
		return t.Default
	}
	return *best
}

func allHold(conds []Cond, args [MaxArgs]uint64, width int) bool {
	for _, c := range conds {
		if !c.Holds(args[c.Arg], width) {
			return false
		}
	}
	return true
}

// Decide is the verdict for a call as seccomp_data describes it: the table of
// the caller's ABI decides, and a call from an ABI without a table gets
// BadArch. x32 calls arrive with the x86_64 audit arch and X32Bit in nr;
// like libseccomp, every number from X32Bit up counts as x32 (higher numbers
// are no syscall on either ABI, so the choice only has to be consistent).
func (r *Resolved) Decide(arch, nr uint32, args [MaxArgs]uint64) Action {
	want := syscalls.I386
	if arch == syscalls.AuditArchX86_64 {
		want = syscalls.X86_64
		if nr >= syscalls.X32Bit {
			want = syscalls.X32
		}
	} else if arch != syscalls.AuditArchI386 {
		return r.BadArch
	}
	for _, t := range r.Tables {
		if t.Arch == want {
			return t.Verdict(nr, args)
		}
	}
	return r.BadArch
}
