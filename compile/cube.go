package compile

import (
	"math/bits"
	"sort"
)

// maxCubeBits bounds the masks tried, and so the submasks checked.
const maxCubeBits = 10

// cube finds a mask M such that every value with no bit outside M leads to
// the same node, and at least three isolated values of that node are among
// them, so one "jset ^M" replaces three or more jeq. Flag sets are the
// typical case: personality(0, 8, 0x20000, 0x20008) or futex ops with
// FUTEX_PRIVATE_FLAG. It returns the spans left for the values outside the
// cube, where the values inside can no longer arrive.
func cube(spans []span) (mask uint32, to nodeID, rest []span, ok bool) {
	byNode := map[nodeID][]uint32{}
	var nodes []nodeID
	for _, s := range spans {
		if s.lo == s.hi {
			if byNode[s.to] == nil {
				nodes = append(nodes, s.to)
			}
			byNode[s.to] = append(byNode[s.to], s.lo)
		}
	}
	for _, n := range nodes {
		m, covered := growCube(spans, byNode[n], n)
		if covered >= 3 {
			return m, n, withoutCube(spans, m), true
		}
	}
	return 0, 0, nil, false
}

// growCube adds points to the mask, fewest bits first, while every submask
// still leads to n.
func growCube(spans []span, points []uint32, n nodeID) (uint32, int) {
	sort.Slice(points, func(i, j int) bool {
		pi, pj := bits.OnesCount32(points[i]), bits.OnesCount32(points[j])
		return pi < pj || pi == pj && points[i] < points[j]
	})
	var m uint32
	for _, p := range points {
		next := m | p
		if bits.OnesCount32(next) <= maxCubeBits && allSubmasksLeadTo(spans, next, n) {
			m = next
		}
	}
	covered := 0
	for _, p := range points {
		if p&^m == 0 {
			covered++
		}
	}
	return m, covered
}

func allSubmasksLeadTo(spans []span, m uint32, n nodeID) bool {
	for s := m; ; s = (s - 1) & m {
		if spanOf(spans, s).to != n {
			return false
		}
		if s == 0 {
			return true
		}
	}
}

func spanOf(spans []span, v uint32) span {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].hi >= v })
	return spans[i]
}

// withoutCube gives the isolated values inside the cube to a neighbour, so
// that the spans around them merge.
func withoutCube(spans []span, m uint32) []span {
	out := append([]span(nil), spans...)
	for i, s := range out {
		if s.lo != s.hi || s.lo&^m != 0 {
			continue
		}
		switch {
		case i > 0:
			out[i].to = out[i-1].to
		case i+1 < len(out):
			out[i].to = out[i+1].to
		}
	}
	return out
}
