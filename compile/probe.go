package compile

import (
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
)

// words is seccomp_data as 32-bit words, indexed by offset / 4.
type words [bpf.SeccompDataSize / 4]uint32

// probeWords turns argument vectors into seccomp_data words. The cost model
// averages over policy.ArgVectors of the syscall's rules: the boundary
// inputs on which paths change, the same inputs measure.Measure reports on.
func probeWords(vectors [][policy.MaxArgs]uint64) []words {
	out := make([]words, len(vectors))
	for i, args := range vectors {
		for a, v := range args {
			out[i][bpf.ArgLow(a)/4] = uint32(v)
			out[i][bpf.ArgHigh(a)/4] = uint32(v >> 32)
		}
	}
	return out
}

// pathLen counts the instructions emit will execute from id on in: a test
// each, a load where the word changes, and the return.
func (d *dag) pathLen(id nodeID, in *words) int {
	n, held := 0, unknownWord
	for {
		nd := &d.nodes[id]
		n++
		if nd.kind == nodeRet {
			return n
		}
		if held != nd.w {
			n++
		}
		v := in[nd.w/4]
		held = nd.w
		if nd.kind == nodeAndEq {
			n++
			v &= nd.mask
			held = unknownWord
		}
		id = nd.f
		if holds(nd.op, v, nd.k) {
			id = nd.t
		}
	}
}

func holds(op uint16, v, k uint32) bool {
	switch op {
	case bpf.JmpJeq:
		return v == k
	case bpf.JmpJgt:
		return v > k
	case bpf.JmpJge:
		return v >= k
	}
	return v&k != 0
}

// meanPath is the mean of pathLen over probes.
func (d *dag) meanPath(id nodeID, probes []words) float64 {
	sum := 0
	for i := range probes {
		sum += d.pathLen(id, &probes[i])
	}
	return float64(sum) / float64(len(probes))
}
