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
	memo     map[[2]int]plan
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
	r := &router{d: d, w: w, spans: spans, sizeCost: sizeCost, memo: map[[2]int]plan{}}
	r.prefix = make([]float64, len(spans)+1)
	for i, s := range spans {
		r.prefix[i+1] = r.prefix[i] + s.weight
	}
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
	key := [2]int{i, j}
	if p, ok := r.memo[key]; ok {
		return p
	}
	p := plan{cost: -1}
	if r.uniform(i, j) {
		p = plan{leaf: true}
	} else {
		if c, ok := r.chainCost(i, j); ok {
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
	r.memo[key] = p
	return p
}

// splitRange bounds the split points tried: all of them for small ranges,
// a window around the weighted median for large ones, which keeps compile
// time near-linear on policies with hundreds of spans.
func (r *router) splitRange(i, j int) (int, int) {
	const window = 24
	if j-i <= 2*window {
		return i + 1, j
	}
	half := (r.prefix[i] + r.prefix[j+1]) / 2
	m := sort.Search(j-i, func(k int) bool { return r.prefix[i+k+1] >= half }) + i
	lo, hi := max(i+1, m-window), min(j, m+window)
	return lo, hi
}

func (r *router) uniform(i, j int) bool {
	for k := i + 1; k <= j; k++ {
		if r.spans[k].to != r.spans[i].to {
			return false
		}
	}
	return true
}

// chainPoints returns the single values of i..j that differ from the
// background shared by all the other spans, heaviest first.
func (r *router) chainPoints(i, j int) ([]span, nodeID, bool) {
	bg := nodeID(-1)
	var points []span
	for k := i; k <= j; k++ {
		s := r.spans[k]
		if s.lo == s.hi {
			points = append(points, s)
			continue
		}
		if bg >= 0 && s.to != bg {
			return nil, 0, false
		}
		bg = s.to
	}
	if bg < 0 {
		return nil, 0, false
	}
	out := points[:0]
	for _, p := range points {
		if p.to != bg {
			out = append(out, p)
		}
	}
	if len(out) > maxChain {
		return nil, 0, false
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].weight > out[b].weight })
	return out, bg, true
}

func (r *router) chainCost(i, j int) (float64, bool) {
	points, _, ok := r.chainPoints(i, j)
	if !ok {
		return 0, false
	}
	rest := r.weight(i, j)
	cost := 0.0
	for n, p := range points {
		cost += p.weight * float64(n+1)
		rest -= p.weight
	}
	n := float64(len(points))
	return cost + rest*n + r.sizeCost*n, true
}

func (r *router) build(i, j int) nodeID {
	p := r.best(i, j)
	switch {
	case p.leaf:
		return r.spans[i].to
	case p.chain:
		points, bg, _ := r.chainPoints(i, j)
		id := bg
		for n := len(points) - 1; n >= 0; n-- {
			id = r.d.test(r.w, bpf.JmpJeq, points[n].lo, points[n].to, id)
		}
		return id
	}
	return r.d.test(r.w, bpf.JmpJge, r.spans[p.split].lo, r.build(p.split, j), r.build(i, p.split-1))
}
