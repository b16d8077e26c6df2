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
	plans    []plan    // n×n, by i*n+j; cost < 0 until computed
	chains   []float64 // n×n cost of a jeq chain, < 0 where none fits
}

// plan is the best way found to route spans i..j.
type plan struct {
	cost  float64
	split int  // jge at spans[split].lo, when > 0
	chain bool // a jeq chain
	leaf  bool // every span leads to the same node
}

// route builds the routing tree for word w and returns its root.
func (d *dag) route(w uint32, spans []span, sizeCost float64) nodeID {
	spans = mergeSpans(spans)
	if len(spans) == 1 {
		return spans[0].to
	}
	n := len(spans)
	r := &router{d: d, w: w, spans: spans, sizeCost: sizeCost, plans: make([]plan, n*n)}
	for i := range r.plans {
		r.plans[i].cost = -1
	}
	r.prefix = make([]float64, len(spans)+1)
	for i, s := range spans {
		r.prefix[i+1] = r.prefix[i] + s.weight
	}
	r.chainCosts()
	return r.build(0, len(spans)-1)
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

func (r *router) best(i, j int) plan {
	slot := &r.plans[i*len(r.spans)+j]
	if slot.cost >= 0 {
		return *slot
	}
	p := plan{cost: -1}
	if i == j { // neighbours never share a node once merged
		p = plan{leaf: true}
	} else {
		if c := r.chains[i*len(r.spans)+j]; c >= 0 {
			p = plan{cost: c, chain: true}
		}
		lo, hi := r.splitRange(i, j)
		for k := lo; k <= hi; k++ {
			c := r.best(i, k-1).cost + r.best(k, j).cost + r.weight(i, j) + r.sizeCost
			if p.cost < 0 || c < p.cost {
				p = plan{cost: c, split: k}
			}
		}
	}
	*slot = p
	return p
}

// splitRange bounds the split points tried by Knuth's rule for optimal
// search trees: the best root of i..j lies between those of i..j-1 and
// i+1..j. That makes the search quadratic instead of cubic; with chains in
// the cost model the rule is a heuristic, so an empty window falls back to
// every split.
func (r *router) splitRange(i, j int) (int, int) {
	lo, hi := i+1, j
	if j-i < 2 {
		return lo, hi
	}
	if p := r.best(i, j-1); p.split > 0 {
		lo = max(lo, p.split)
	}
	if p := r.best(i+1, j); p.split > 0 {
		hi = min(hi, p.split)
	}
	if lo > hi {
		return i + 1, j
	}
	return lo, hi
}

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
	p := r.best(i, j)
	switch {
	case p.leaf:
		return r.spans[i].to
	case p.chain:
		bg := r.background(i, j)
		points := r.appendPoints(nil, i, j, bg)
		id := bg
		for n := len(points) - 1; n >= 0; n-- {
			id = r.d.test(r.w, bpf.JmpJeq, points[n].lo, points[n].to, id)
		}
		return id
	}
	return r.d.test(r.w, bpf.JmpJge, r.spans[p.split].lo, r.build(p.split, j), r.build(i, p.split-1))
}
