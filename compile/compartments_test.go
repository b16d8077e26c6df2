package compile

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// randomSpec lays out random compartments: each has a stub slot, some
// also own code ranges, one of which crosses a 4 GiB boundary, and the
// runtime has code in a third region.
func randomSpec(t *testing.T, rng *rand.Rand) *compartment.Spec {
	t.Helper()
	p := randomPolicy(rng)
	p.Arches = []syscalls.Arch{syscalls.X86_64}
	n := rng.Intn(6) + 1
	shift := uint8(13 + rng.Intn(3))
	l := compartment.Layout{Window: 0x7f12_3450_0000, SlotShift: shift,
		Sites: uint64(rng.Intn(1<<shift-compartment.SiteStride*compartment.SiteCount+1)) &^ 3, Text: map[string][]compartment.Range{}}
	text := uint64(0x5555_ffff_0000)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("lib%d.so", i)
		c := policy.Compartment{Name: name, Path: "/lib/" + name}
		for k := rng.Intn(8); k > 0; k-- {
			c.Syscalls = append(c.Syscalls, namePool[rng.Intn(len(namePool))])
		}
		// Half the compartments keep only some calls once serving.
		if rng.Intn(2) == 0 {
			c.Serving = []string{}
			for _, name := range c.Syscalls {
				if rng.Intn(2) == 0 {
					c.Serving = append(c.Serving, name)
				}
			}
		}
		// Half the compartments say what their code can reach.
		if rng.Intn(2) == 0 {
			c.Reach = []string{}
			for k := rng.Intn(8); k > 0; k-- {
				c.Reach = append(c.Reach, namePool[rng.Intn(len(namePool))])
			}
		}
		p.Compartments = append(p.Compartments, c)
		l.Slots = append(l.Slots, name)
		if rng.Intn(2) == 0 {
			size := uint64(rng.Intn(0x20000) + 0x1000)
			l.Text[name] = append(l.Text[name], compartment.Range{Start: text, End: text + size})
			text += size + uint64(rng.Intn(0x1000))
		}
	}
	if rng.Intn(2) == 0 {
		p.ServingFrom = []string{"epoll_wait"}
	}
	l.Runtime = []compartment.Range{{Start: 0x7ff0_0000_0000, End: 0x7ff0_0020_0000}, {Start: 0x7ff0_0030_0000, End: 0x7ff0_0031_0000}}
	s, err := compartment.NewSpec(p, l)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ips are instruction pointers at the edges of every range of l, around
// the site of call nr in every slot, and some outside them all.
func ips(l compartment.Layout, nr uint32) []uint64 {
	out := []uint64{0, 0x1000, ^uint64(0), l.Window - 1}
	edges := func(r compartment.Range) { out = append(out, r.Start, r.Start+1, r.End-1, r.End) }
	site, pinned := l.Pinned(nr)
	for i := range l.Slots {
		start := l.Window + uint64(i)<<l.SlotShift
		edges(compartment.Range{Start: start, End: start + 1<<l.SlotShift})
		if pinned {
			out = append(out, start+site-1, start+site, start+site+1)
		}
	}
	for _, rs := range l.Text {
		for _, r := range rs {
			edges(r)
		}
	}
	for _, r := range l.Runtime {
		edges(r)
	}
	return out
}

// TestCompartmentsMatchSpec compiles random per-library filters and checks
// every verdict against compartment.Spec.Verdict, instruction pointers at
// every edge of the layout included.
func TestCompartmentsMatchSpec(t *testing.T) {
	total := 0
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		s := randomSpec(t, rng)
		prog, err := Compartments(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := bpf.Validate(prog); err != nil {
			t.Fatal(err)
		}
		for _, nr := range append(s.Union.Numbers(), 1000, syscalls.X32Bit) {
			for _, args := range policy.ArgVectors(s.Union.Syscalls[nr]) {
				for _, ip := range ips(s.Layout, nr) {
					d := bpf.SeccompData{Nr: nr, Arch: syscalls.AuditArchX86_64, IP: ip, Args: args}
					res, err := bpf.Run(prog, &d)
					if err != nil {
						t.Fatal(err)
					}
					total++
					if want := s.Verdict(d.Arch, nr, ip, args); res.Ret != want.Ret() {
						t.Fatalf("seed %d: nr %d ip %#x args %x: program %s, spec %s\n%s", seed, nr, ip, args, policy.ActionFromRet(res.Ret), want, bpf.Disassemble(prog))
					}
				}
			}
		}
	}
	t.Logf("%d inputs agree", total)
}

// TestCompartmentsKeepNumberOnlyVerdictsCacheable: calls every compartment
// may make, and calls none may make, are decided without the instruction
// pointer.
func TestCompartmentsKeepNumberOnlyVerdictsCacheable(t *testing.T) {
	for seed := int64(1); seed <= 100; seed++ {
		s := randomSpec(t, rand.New(rand.NewSource(seed)))
		prog, err := Compartments(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range s.Union.Numbers() {
			if s.Coverage(nr) == compartment.Some {
				continue
			}
			d := bpf.SeccompData{Nr: nr, Arch: syscalls.AuditArchX86_64, IP: s.Layout.Window}
			res, err := bpf.Run(prog, &d)
			if err != nil {
				t.Fatal(err)
			}
			if res.ReadsIP {
				t.Fatalf("seed %d: syscall %d, decided by number, reads the instruction pointer", seed, nr)
			}
		}
	}
}
