package compile

import (
	"sort"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Compartments compiles the per-library filter of s: the union's rules
// decide first; a syscall every compartment may make is allowed by number
// and one none may make is denied by number, so both stay cacheable; the
// rest are routed on the instruction pointer to the verdict of the
// compartment whose code made the call, or to the supervisor.
func Compartments(s *compartment.Spec) ([]bpf.Instruction, error) {
	c := &compiler{d: newDAG(), memo: map[string]nodeID{}}
	bad := c.d.ret(s.BadArch.Ret())
	nr := c.compartmentNrNode(s, bad)
	spans := fillGaps([]span{{lo: syscalls.AuditArchX86_64, hi: syscalls.AuditArchX86_64, to: nr, weight: 1}}, bad)
	root := c.d.route(bpf.OffsetArch, spans, sizeCost)
	prog, err := emit(c.d, root)
	if err != nil {
		return nil, err
	}
	return bpf.Optimize(prog), nil
}

// compartmentNrNode routes on the syscall number; numbers from the x32 bit
// up are a bad arch.
func (c *compiler) compartmentNrNode(s *compartment.Spec, bad nodeID) nodeID {
	t := s.Union
	def := c.d.ret(t.Default.Ret())
	nrs := map[uint32]bool{}
	for _, nr := range t.Numbers() {
		nrs[nr] = true
	}
	var spans []span
	next := uint64(0)
	for _, nr := range sortedKeys(nrs) {
		if uint64(nr) > next {
			spans = append(spans, span{lo: uint32(next), hi: nr - 1, to: def, weight: uniformWeight(uint32(next), nr-1, 0)})
		}
		f := newFunction(t.Syscalls[nr], t.Default, false)
		to, w := c.compartmentCall(s, nr, f)
		spans = append(spans, span{lo: nr, hi: nr, to: to, weight: w})
		next = uint64(nr) + 1
	}
	spans = append(spans, span{lo: uint32(next), hi: syscalls.X32Bit - 1, to: def, weight: uniformWeight(uint32(next), syscalls.X32Bit-1, 0)})
	spans = append(spans, span{lo: syscalls.X32Bit, hi: ^uint32(0), to: bad, weight: spanFloor})
	return c.d.route(bpf.OffsetNr, spans, sizeCost)
}

// compartmentCall is the node deciding syscall nr, whose union function is
// f, and the weight of its span.
func (c *compiler) compartmentCall(s *compartment.Spec, nr uint32, f *function) (nodeID, float64) {
	switch s.Coverage(nr) {
	case compartment.All:
		return c.fnNode(f), c.callWeight(syscalls.X86_64, nr, f)
	case compartment.None:
		return c.fnNode(f.allowAs(s.Union.Default)), 1
	}
	verdict := func(a policy.Action) nodeID { return c.fnNode(f.allowAs(a)) }
	return c.ipNode(s, nr, verdict), 1 + argWeight
}

// ipNode routes on the instruction pointer: the high word first, then the
// low word inside each 4 GiB region that holds known code. Code the layout
// does not know goes to the supervisor, and so does the runtime's, unless
// the compartments that can reach the call through it all may make it,
// or none may (Spec.RuntimeCoverage). In a slot of the window whose
// compartment may make the call, the call's site decides: the low word's
// offset in the slot, one masked compare, since every slot holds the same
// block at an address aligned to its size.
func (c *compiler) ipNode(s *compartment.Spec, nr uint32, verdict func(policy.Action) nodeID) nodeID {
	l := s.Layout
	sup, allow, deny := verdict(compartment.Supervise), verdict(policy.ActAllow), verdict(s.Union.Default)
	pinned := deny
	if site, ok := l.Pinned(nr); ok {
		pinned = c.d.andEq(bpf.OffsetIPLow, 1<<l.SlotShift-1, uint32(site), allow, deny)
	}
	var ranges []ipRange
	pinnedSup := deny
	if site, ok := l.Pinned(nr); ok {
		pinnedSup = c.d.andEq(bpf.OffsetIPLow, 1<<l.SlotShift-1, uint32(site), sup, deny)
	}
	own := func(name string, allowed, starting nodeID) nodeID {
		switch {
		case s.Allowed[name][nr]:
			return allowed
		case s.Starting[name][nr]:
			return starting
		}
		return deny
	}
	for i, name := range l.Slots {
		start := l.Window + uint64(i)<<l.SlotShift
		ranges = append(ranges, ipRange{compartment.Range{Start: start, End: start + 1<<l.SlotShift}, own(name, pinned, pinnedSup)})
	}
	for name, rs := range l.Text {
		to := own(name, allow, sup)
		for _, r := range rs {
			ranges = append(ranges, ipRange{r, to})
		}
	}
	runtime := sup
	switch s.RuntimeCoverage(nr) {
	case compartment.All:
		runtime = allow
	case compartment.None:
		runtime = deny
	}
	for _, r := range l.Runtime {
		ranges = append(ranges, ipRange{r, runtime})
	}
	return c.routeIP(ranges, sup)
}

type ipRange struct {
	compartment.Range
	to nodeID
}

// routeIP splits ranges at 4 GiB boundaries, routes each region's low
// words, then routes the high word to the regions.
func (c *compiler) routeIP(ranges []ipRange, bg nodeID) nodeID {
	byHi := map[uint32][]span{}
	for _, r := range ranges {
		for start := r.Start; start < r.End; {
			hi := uint32(start >> 32)
			end := min(r.End, (uint64(hi)+1)<<32)
			byHi[hi] = append(byHi[hi], span{lo: uint32(start), hi: uint32(end - 1), to: r.to, weight: 1})
			start = end
		}
	}
	var his []span
	for _, hi := range sortedKeys(byHi) {
		lo := byHi[hi]
		sort.Slice(lo, func(i, j int) bool { return lo[i].lo < lo[j].lo })
		to := c.d.route(bpf.OffsetIPLow, fillGaps(lo, bg), sizeCost)
		his = append(his, span{lo: hi, hi: hi, to: to, weight: 1})
	}
	return c.d.route(bpf.OffsetIPHigh, fillGaps(his, bg), sizeCost)
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
