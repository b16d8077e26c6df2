// Package compile turns a resolved policy into a seccomp-bpf program.
//
// The optimizing compiler builds a decision DAG: a test of the arch word,
// then a tree over syscall-number spans, then, for syscalls whose verdict
// depends on arguments, tests over 32-bit argument words. Equal subtrees and
// returns are shared (hash-consing), 64-bit comparisons are split into
// halves that are tested once, and the trees are chosen by a cost model of
// instructions executed (weighted by how often a call is expected) and
// program size. Verdicts that do not depend on arguments are reached through
// loads of nr and arch only, so the kernel's action cache holds them. The
// DAG is laid out as cBPF with a load only where the accumulator does not
// already hold the word, and the bytecode optimizer finishes the job.
//
// The unoptimized compiler (Naive) renders the same policy the obvious way;
// tests hold the two against each other and against policy.Resolved.Decide.
package compile

import (
	"fmt"
	"sort"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Options tune the compiler. The zero value is valid.
type Options struct {
	// Hot names the non-cacheable syscalls expected most often, most
	// frequent first; their paths are made shortest.
	Hot []string
	// NoOptimize selects the unoptimized compiler.
	NoOptimize bool
}

// Weights of the cost model: every syscall number counts once (the uniform
// measure); a syscall whose verdict reads arguments counts argWeight/16 for
// each of its probe inputs, since the kernel cannot cache it and runs the
// filter on every call; hot syscalls count more still, by rank.
const (
	argWeight = 30000.0
	hotWeight = 60000.0
	// sizeCost is what one more instruction in the program is worth, in
	// executed instructions over the uniform measure.
	sizeCost = 6.0
	// measured is how many numbers of each ABI the uniform measure covers.
	measured = 1024
	// spanFloor is added to the weight of every run of default verdicts, so
	// that none is light enough to be buried deep: it bounds the longest path.
	spanFloor = 16.0
)

// Compile builds the program for r.
func Compile(r *policy.Resolved, opt Options) ([]bpf.Instruction, error) {
	if len(r.Tables) == 0 {
		return nil, fmt.Errorf("compile: no architecture selected")
	}
	if opt.NoOptimize {
		return Naive(r)
	}
	c := &compiler{d: newDAG(), memo: map[string]nodeID{}, hot: hotRanks(r, opt.Hot)}
	root := c.archNode(r)
	prog, err := emit(c.d, root)
	if err != nil {
		return nil, explainTooLong(err, r, len(prog))
	}
	return bpf.Optimize(prog), nil
}

type compiler struct {
	d    *dag
	memo map[string]nodeID // function key → node
	hot  map[hotKey]int    // rank among hot syscalls, 0 = hottest
}

type hotKey struct {
	arch syscalls.Arch
	nr   uint32
}

func hotRanks(r *policy.Resolved, names []string) map[hotKey]int {
	ranks := map[hotKey]int{}
	for _, t := range r.Tables {
		for i, n := range names {
			if nr, ok := syscalls.Lookup(t.Arch, n); ok {
				ranks[hotKey{t.Arch, nr}] = i
			}
		}
	}
	return ranks
}

// archNode routes on seccomp_data.arch to the syscall tree of each ABI.
func (c *compiler) archNode(r *policy.Resolved) nodeID {
	bad := c.d.ret(r.BadArch.Ret())
	byArch := map[syscalls.Arch]*policy.Table{}
	for _, t := range r.Tables {
		byArch[t.Arch] = t
	}
	var spans []span
	if byArch[syscalls.X86_64] != nil || byArch[syscalls.X32] != nil {
		to := c.nrNode(byArch[syscalls.X86_64], byArch[syscalls.X32], bad)
		spans = append(spans, span{lo: syscalls.AuditArchX86_64, hi: syscalls.AuditArchX86_64, to: to, weight: 1})
	}
	if t := byArch[syscalls.I386]; t != nil {
		to := c.nrNode(t, nil, bad)
		spans = append(spans, span{lo: syscalls.AuditArchI386, hi: syscalls.AuditArchI386, to: to, weight: 1})
	}
	return c.d.route(bpf.OffsetArch, fillGaps(spans, bad), sizeCost)
}

// nrNode routes on the syscall number. For the x86_64 audit arch, numbers
// with the x32 bit belong to the x32 table; without one they are a bad arch.
func (c *compiler) nrNode(low, x32 *policy.Table, bad nodeID) nodeID {
	var spans []span
	spans = append(spans, c.tableSpans(low, 0, syscalls.X32Bit-1, bad)...)
	if low == nil || low.Arch != syscalls.I386 {
		spans = append(spans, c.tableSpans(x32, syscalls.X32Bit, ^uint32(0), bad)...)
	}
	return c.d.route(bpf.OffsetNr, spans, sizeCost)
}

// tableSpans covers [lo, hi] with t's syscalls on a background of t's
// default, or of bad when there is no table.
func (c *compiler) tableSpans(t *policy.Table, lo, hi uint32, bad nodeID) []span {
	if t == nil {
		return []span{{lo: lo, hi: hi, to: bad, weight: uniformWeight(lo, hi, lo)}}
	}
	def := c.d.ret(t.Default.Ret())
	var spans []span
	next := uint64(lo)
	for _, nr := range t.Numbers() {
		if nr < lo || nr > hi {
			continue
		}
		if uint64(nr) > next {
			spans = append(spans, span{lo: uint32(next), hi: nr - 1, to: def, weight: uniformWeight(uint32(next), nr-1, lo)})
		}
		f := newFunction(t.Syscalls[nr], t.Default, t.Arch.Is32Bit())
		spans = append(spans, span{lo: nr, hi: nr, to: c.fnNode(f), weight: c.callWeight(t.Arch, nr, f)})
		next = uint64(nr) + 1
	}
	if next <= uint64(hi) {
		spans = append(spans, span{lo: uint32(next), hi: hi, to: def, weight: uniformWeight(uint32(next), hi, lo)})
	}
	return spans
}

// uniformWeight counts the numbers of [lo, hi] inside the measured range of
// an ABI that starts at base, plus spanFloor.
func uniformWeight(lo, hi, base uint32) float64 {
	end := uint64(base) + measured - 1
	if uint64(lo) > end {
		return spanFloor
	}
	return float64(min(uint64(hi), end)-uint64(lo)+1) + spanFloor
}

func (c *compiler) callWeight(a syscalls.Arch, nr uint32, f *function) float64 {
	w := 1.0
	if !f.constant() {
		w += argWeight * float64(len(f.probes)) / 16
	}
	if rank, ok := c.hot[hotKey{a, nr}]; ok {
		w += hotWeight / float64(rank+1)
	}
	return w
}

// fillGaps completes sorted point spans into a cover of all 32-bit values.
func fillGaps(spans []span, bg nodeID) []span {
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	var out []span
	next := uint64(0)
	for _, s := range spans {
		if uint64(s.lo) > next {
			out = append(out, span{lo: uint32(next), hi: s.lo - 1, to: bg})
		}
		out = append(out, s)
		next = uint64(s.hi) + 1
	}
	if next <= uint64(^uint32(0)) {
		out = append(out, span{lo: uint32(next), hi: ^uint32(0), to: bg})
	}
	return out
}
