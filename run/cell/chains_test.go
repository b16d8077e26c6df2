package cell

import (
	"testing"

	"github.com/syscell/syscell/unwind"
)

// fakeMemory maps addresses to words.
type fakeMemory map[uint64]uint64

func (m fakeMemory) Word(addr uint64) (uint64, error) {
	if w, ok := m[addr]; ok {
		return w, nil
	}
	return 0, unwind.ErrOutsideStack
}

func TestChains(t *testing.T) {
	const pc, sp = 0x7f00_0000_1234, 0x7ffd_0000_0000
	ra := unwind.Input{Kind: unwind.InputStack, Offset: 8}
	rbp := unwind.Input{Kind: unwind.InputRegister, Reg: unwind.RBP}
	with := func(in unwind.Input, v uint64) unwind.Input { in.Value = v; return in }
	c := newChains()
	c.learn(pc, []unwind.Input{with(ra, 0x5555_0000_1000)}, owner{compartment: "a", label: "a"})
	c.learn(pc, []unwind.Input{with(ra, 0x5555_0000_2000), with(rbp, 7)}, owner{compartment: "b", label: "b"})
	c.learn(pc+1, nil, owner{label: OwnerRuntime, runtime: true})
	for _, tc := range []struct {
		name    string
		pc, ret uint64
		rbp     uint64
		want    string
		hit     bool
	}{
		{"first path", pc, 0x5555_0000_1000, 0, "a", true},
		{"second path", pc, 0x5555_0000_2000, 7, "b", true},
		{"second path, other register", pc, 0x5555_0000_2000, 8, "", false},
		{"unknown return address", pc, 0x5555_0000_3000, 0, "", false},
		{"no inputs", pc + 1, 0, 0, OwnerRuntime, true},
		{"unknown pc", pc + 2, 0x5555_0000_1000, 0, "", false},
	} {
		var regs unwind.Regs
		regs[unwind.RA], regs[unwind.RSP], regs[unwind.RBP] = tc.pc, sp, tc.rbp
		o, ok := c.lookup(&regs, fakeMemory{sp + 8: tc.ret})
		if ok != tc.hit || o.label != tc.want {
			t.Errorf("%s: %+v, %v; want %q, %v", tc.name, o, ok, tc.want, tc.hit)
		}
	}
}
