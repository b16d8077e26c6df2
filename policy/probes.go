package policy

import "sort"

// ArgVectors returns the argument vectors that exercise every condition of a
// syscall's branches, the boundary inputs on which paths and verdicts
// change: for each compared value its neighbours, the value with
// its high half changed, and the extremes, one argument varied at a time,
// plus all-zero arguments. The result is sorted, so measurements are
// reproducible.
func ArgVectors(branches []Branch) [][MaxArgs]uint64 {
	perArg := map[uint8]map[uint64]bool{}
	for _, b := range branches {
		for _, c := range b.Conds {
			if perArg[c.Arg] == nil {
				perArg[c.Arg] = map[uint64]bool{}
			}
			for _, v := range probes(c) {
				perArg[c.Arg][v] = true
			}
		}
	}
	seen := map[[MaxArgs]uint64]bool{{}: true}
	out := [][MaxArgs]uint64{{}}
	for arg, vals := range perArg {
		for v := range vals {
			var vec [MaxArgs]uint64
			vec[arg] = v
			if !seen[vec] {
				seen[vec] = true
				out = append(out, vec)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func probes(c Cond) []uint64 {
	v := c.Value
	ps := []uint64{v, v - 1, v + 1, v ^ 1<<32, v ^ 1<<63, 0, ^uint64(0), 1 << 31}
	if c.Op == MaskedEq {
		ps = append(ps, v|^c.Mask, v^c.Mask, c.Mask)
	}
	return ps
}

func less(a, b [MaxArgs]uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
