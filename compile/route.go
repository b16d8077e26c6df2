package compile

import (
	"sort"

	"github.com/syscell/syscell/bpf"
)

// span is a run of values [lo, hi] of a word that all lead to one node;
// weight is how much a short path for these values is worth.
type span struct {
	lo, hi uint32
	to     nodeID
	weight float64
}

// maxChain bounds the jeq chains the router considers.
const maxChain = 16

// router chooses, for one word, the tree of tests that sends every value to
// its span's node at the least cost: the weighted number of tests executed
// plus sizeCost per test in the program. Besides splitting the value range
// with jge (a binary search over spans), a range where isolated values stand
// out of one background can be resolved by a chain of jeq, which costs one
// test per value instead of two.
type router struct {
	d        *dag
	w        uint32
	spans    []span
	prefix   []float64
	sizeCost float64
	// cost and choice hold, for every range i..j at i*n+j, the least
	// cost found and how: a split point k > 0 (jge at spans[k].lo),
	// chainChoice, or 0 for a single span.
	cost   []float64
	choice []int32
	chains []float64 // n×n cost of a jeq chain, < 0 where none fits
}

// chainChoice marks a range best resolved by a jeq chain.
const chainChoice = -1

// route builds the routing tree for word w and returns its root.
func (d *dag) route(w uint32, spans []span, sizeCost float64) nodeID {
	spans = mergeSpans(spans)
	if len(spans) == 1 {
		return spans[0].to
	}
	return d.routeWith(newRouter(d, w, spans, sizeCost))
}

// routeWith builds r's tree, first peeling the heaviest inner value with a
// jeq when that is cheaper: a binary tree over spans cannot test an inner
// value first, and a value that weighs more than the rest together is worth
// one test at the root for everyone else.
func (d *dag) routeWith(r *router) nodeID {
	n := len(r.spans)
	// A peel saves the value at most the depth of the tree, about 8 tests,
	// and costs everything else one: a lighter value cannot win.
	if p, rest, ok := heaviestPoint(r.spans); ok && 8*p.weight > r.total()-p.weight {
		peeled := newRouter(d, r.w, rest, r.sizeCost)
		if r.total()+r.sizeCost+peeled.best() < r.best() {
			return d.test(r.w, bpf.JmpJeq, p.lo, p.to, d.routeWith(peeled))
		}
	}
	return r.build(0, n-1)
}

func newRouter(d *dag, w uint32, spans []span, sizeCost float64) *router {
	n := len(spans)
	r := &router{d: d, w: w, spans: spans, sizeCost: sizeCost, cost: make([]float64, n*n), choice: make([]int32, n*n)}
	r.prefix = make([]float64, n+1)
	for i, s := range spans {
		r.prefix[i+1] = r.prefix[i] + s.weight
	}
	r.chainCosts()
	r.solve()
	return r
}

func (r *router) total() float64 { return r.prefix[len(r.spans)] }

// heaviestPoint finds the single value that weighs most, if it is an inner
// one that cannot be a leaf of a shallow tree, and the spans without it: its
// value goes to a neighbour, since the jeq before them takes it.
func heaviestPoint(spans []span) (span, []span, bool) {
	best := -1
	for i, s := range spans {
		if s.lo == s.hi && i > 0 && i < len(spans)-1 && (best < 0 || s.weight > spans[best].weight) {
			best = i
		}
	}
	if best < 0 {
		return span{}, nil, false
	}
	rest := append([]span(nil), spans...)
	rest[best].to = rest[best-1].to
	rest[best].weight = 0
	return spans[best], mergeSpans(rest), true
}

// mergeSpans joins neighbours that lead to the same node.
func mergeSpans(spans []span) []span {
	var out []span
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].to == s.to {
			out[n-1].hi = s.hi
			out[n-1].weight += s.weight
			continue
		}
		out = append(out, s)
	}
	return out
}

func (r *router) weight(i, j int) float64 { return r.prefix[j+1] - r.prefix[i] }

// solve fills cost and choice for every range, shortest first. Split
// points are bounded by Knuth's rule for optimal search trees: the best root
// of i..j lies between those of i..j-1 and i+1..j, which makes the search
// quadratic instead of cubic; with chains in the cost model the rule is a
// heuristic, so a range whose neighbours chose no split tries every split.
func (r *router) solve() {
	n := len(r.spans)
	for length := 1; length < n; length++ {
		for i := 0; i+length < n; i++ {
			j := i + length
			at := i*n + j
			best, choice := r.chains[at], int32(chainChoice)
			lo, hi := i+1, j
			if length > 1 {
				if k := r.choice[at-1]; k > 0 {
					lo = max(lo, int(k))
				}
				if k := r.choice[at+n]; k > 0 {
					hi = min(hi, int(k))
				}
				if lo > hi {
					lo, hi = i+1, j
				}
			}
			w := r.weight(i, j) + r.sizeCost
			for k := lo; k <= hi; k++ {
				if c := r.cost[i*n+k-1] + r.cost[k*n+j] + w; best < 0 || c < best {
					best, choice = c, int32(k)
				}
			}
			r.cost[at], r.choice[at] = best, choice
		}
	}
}

// best is the least cost of routing the whole word.
func (r *router) best() float64 { return r.cost[len(r.spans)-1] }

// chainCosts computes the cost of a jeq chain for every range that can
// have one, extending each range one span at a time and keeping its single
// values sorted heaviest first, so that no range is collected or sorted
// from scratch.
func (r *router) chainCosts() {
	n := len(r.spans)
	r.chains = make([]float64, n*n)
	for i := range r.chains {
		r.chains[i] = -1
	}
	points := make([]span, 0, 2*maxChain+1)
	for i := 0; i < n; i++ {
		bg := nodeID(-1)
		points = points[:0]
		for j := i; j < n && j-i <= 2*maxChain; j++ {
			s := r.spans[j]
			if s.lo == s.hi {
				points = insertByWeight(points, s)
			} else if bg >= 0 && s.to != bg {
				break
			} else {
				bg = s.to
			}
			if bg >= 0 && j > i {
				r.chains[i*n+j] = r.chainCost(points, bg, r.weight(i, j))
			}
		}
	}
}

// insertByWeight inserts s into points, kept heaviest first.
func insertByWeight(points []span, s span) []span {
	k := sort.Search(len(points), func(k int) bool { return points[k].weight < s.weight })
	points = append(points, span{})
	copy(points[k+1:], points[k:])
	points[k] = s
	return points
}

// chainCost is the cost of testing the points that differ from bg in
// order, everything else paying for every test; -1 when there are too many.
func (r *router) chainCost(points []span, bg nodeID, total float64) float64 {
	cost, m := 0.0, 0
	for _, p := range points {
		if p.to == bg {
			continue
		}
		m++
		cost += p.weight * float64(m)
		total -= p.weight
	}
	if m > maxChain {
		return -1
	}
	return cost + total*float64(m) + r.sizeCost*float64(m)
}

// appendPoints appends the single values of i..j that differ from bg,
// heaviest first.
func (r *router) appendPoints(buf []span, i, j int, bg nodeID) []span {
	for k := i; k <= j; k++ {
		if s := r.spans[k]; s.lo == s.hi && s.to != bg {
			buf = append(buf, s)
		}
	}
	sort.SliceStable(buf, func(a, b int) bool { return buf[a].weight > buf[b].weight })
	return buf
}

// background is the node of the wide spans of a chainable range.
func (r *router) background(i, j int) nodeID {
	for k := i; k <= j; k++ {
		if s := r.spans[k]; s.lo != s.hi {
			return s.to
		}
	}
	panic("compile: chain without background")
}

func (r *router) build(i, j int) nodeID {
	switch k := r.choice[i*len(r.spans)+j]; {
	case i == j:
		return r.spans[i].to
	case k == chainChoice:
		bg := r.background(i, j)
		points := r.appendPoints(nil, i, j, bg)
		id := bg
		for n := len(points) - 1; n >= 0; n-- {
			id = r.d.test(r.w, bpf.JmpJeq, points[n].lo, points[n].to, id)
		}
		return id
	default:
		return r.d.test(r.w, bpf.JmpJge, r.spans[k].lo, r.build(int(k), j), r.build(i, int(k)-1))
	}
}
