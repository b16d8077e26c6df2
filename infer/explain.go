package infer

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/syscell/syscell/infer/x86"
	"github.com/syscell/syscell/syscalls"
)

// Why is one path by which a compartment can make a call: from a
// function of its live code, through the calls the solver followed, to
// the instruction that makes it. It answers the question a user of an
// inferred policy asks of a call it holds ("why may this library call
// mremap?"), and says which over-approximation, if any, put it there.
type Why struct {
	// Compartment is the object's path, or [runtime].
	Compartment string
	Call        string
	// Steps start at a function of the compartment (or, for [runtime]
	// and lazy binding, where the runtime starts code) and end at the
	// function that makes the call.
	Steps []Step
	// End says how the last step makes the call.
	End string
}

// Step is one function, or pool of functions, on a Why's path.
type Step struct {
	// Object is the function's object's path ("" for a pool), Name the
	// name it exports it by ("" if none) or the pool's description.
	Object, Name string
	Entry        uint64
	// How says how the step before reaches this one.
	How string
}

// String names a step as a user finds the function: by its object's
// file name and its export, or its address in the object.
func (s Step) String() string {
	switch {
	case s.Object == "":
		return s.Name
	case s.Name != "":
		return fmt.Sprintf("%s %s", filepath.Base(s.Object), s.Name)
	}
	return fmt.Sprintf("%s+%#x", filepath.Base(s.Object), s.Entry)
}

// Explain finds, for each call name of the program at exe's inferred
// policy, in each compartment that holds it, one shortest path that
// puts it there. An empty names explains every call of the union.
func Explain(exe string, opt Options, names []string) ([]Why, error) {
	p, objs, err := link(exe, opt)
	if err != nil {
		return nil, err
	}
	type comp struct {
		name  string
		obj   int
		calls Calls
	}
	var comps []comp
	union := map[string]bool{}
	for i, o := range objs {
		if !p.s.runtime[i] {
			comps = append(comps, comp{o.Path, i, p.Object(i)})
		}
	}
	comps = append(comps, comp{"[runtime]", -1, p.Runtime()})
	for _, c := range comps {
		for _, n := range c.calls.Names() {
			union[n] = true
		}
	}
	if len(names) == 0 {
		names = sortedKeys(union)
	}
	var out []Why
	memo := &explainMemo{finals: map[int]summary{}, names: make([]map[uint64]string, len(objs))}
	for _, name := range names {
		nr, ok := syscalls.Lookup(syscalls.X86_64, name)
		if !ok {
			return nil, fmt.Errorf("--explain: no x86_64 system call %q", name)
		}
		for _, c := range comps {
			if !c.calls.has(uint64(nr)) {
				continue
			}
			w := p.explain(c.obj, uint64(nr), memo)
			w.Compartment, w.Call = c.name, name
			out = append(out, w)
		}
	}
	return out, nil
}

// has says whether c holds the call nr.
func (c Calls) has(nr uint64) bool { return c.All || c.nrs.has(nr) }

func (s *nrSet) has(nr uint64) bool { return nr < maxNr && s[nr/64]&(1<<(nr%64)) != 0 }

// explainer searches, breadth first, the graph the solver summed up.
// A state is a node with a mode, or a pool: in mode own, what the node
// does counts for the caller (its summary: a function of the
// compartment's object, or of the runtime, which acts for its caller);
// in mode up, only what its tail calls make its caller's (a function of
// another object runs in its own frame, which keeps its other calls in
// its object). An edge is followed only into a state whose summary, with
// what its pools do, holds the call, so that every path found ends
// where the call is made.
type explainer struct {
	p     *Program
	nr    uint64
	loose bool
	// from says how each state was first reached: the state before
	// (-1 for a source) and how.
	from  map[int]hop
	queue []int
	// done is set once a state makes the call: the state, and a last
	// step and the end's description.
	done *ending
	*explainMemo
}

// explainMemo is what searches share: what the nodes' summaries do with
// their pools (final), by summaryKey, and each object's functions' names
// (exportNames).
type explainMemo struct {
	finals map[int]summary
	names  []map[uint64]string
}

// summaryKey names node n's summary (up: its ups) in explainer.finals.
func summaryKey(n int, up bool) int {
	if up {
		return 2*n + 1
	}
	return 2 * n
}

type hop struct {
	prev int
	how  string
}

type ending struct {
	state int
	last  *Step
	end   string
}

// Modes of a node's state.
const (
	modeOwn = iota
	modeUp
)

func (x *explainer) state(n, mode int) int { return 2*n + mode }

func (x *explainer) pool(p int) int { return 2*len(x.p.s.nodes) + p }

// explain is the path by which object i (-1: [runtime]) makes call nr.
// It looks for a call made with a known number first, then, if there is
// none, one made with a number the analysis does not know.
func (p *Program) explain(i int, nr uint64, memo *explainMemo) Why {
	for _, loose := range []bool{false, true} {
		x := &explainer{p: p, nr: nr, loose: loose, from: map[int]hop{}, explainMemo: memo}
		x.sources(i)
		if w, ok := x.search(); ok {
			return w
		}
	}
	return Why{End: "no path found: the call comes from where the analysis joins summaries (an export called with arguments it does not know)"}
}

// contains says whether what sum does, with its pools, holds the call.
func (x *explainer) contains(sum summary) bool {
	f := x.p.final(sum)
	return f.nrs.has(x.nr) || x.loose && f.all
}

// holds says whether node n's summary (up: its ups), with its pools,
// holds the call.
func (x *explainer) holds(n int, up bool) bool {
	k := summaryKey(n, up)
	f, ok := x.finals[k]
	if !ok {
		sum := x.p.s.sums[n]
		if up {
			sum = x.p.s.ups[n]
		}
		f = x.p.final(sum)
		x.finals[k] = f
	}
	return f.nrs.has(x.nr) || x.loose && f.all
}

// visit notes that state to is reached from prev.
func (x *explainer) visit(prev, to int, how string) {
	if _, ok := x.from[to]; ok {
		return
	}
	x.from[to] = hop{prev, how}
	x.queue = append(x.queue, to)
}

// sources are the states a compartment's calls start from: as Object
// and Runtime count them.
func (x *explainer) sources(i int) {
	s := x.p.s
	if i < 0 {
		x.toPool(-1, poolRuntime, "the runtime calls it through a pointer (a thread's or a handler's start)")
		for _, n := range s.byName("__libc_start_main").nodes {
			x.visit(-1, x.state(n, modeOwn), "the runtime starts the program")
		}
		return
	}
	o := s.objs[i]
	entries := x.p.entries(i)
	for _, addr := range sortedKeys(o.Functions) {
		n := s.index[i][addr]
		if o.Exec && addr == o.Entry || !s.live[n] {
			continue
		}
		// Called from elsewhere, with arguments the analysis does not
		// know, an export whose parameter is a call's number makes any.
		switch {
		case x.holds(n, false):
			x.visit(-1, x.state(n, modeOwn), "")
		case x.loose && entries[n] && s.sums[n].params != 0:
			x.visit(-1, x.state(n, modeOwn), "")
			x.finish(x.state(n, modeOwn), nil, "exported: called with arguments the analysis does not know, one of which is a call's number")
		}
	}
	if !o.BindNow && hasPLT(o) {
		for _, n := range s.trampolines().nodes {
			x.visit(-1, x.state(n, modeOwn), "the loader's lazy binding of its imports")
		}
	}
}

// search runs the search and makes the path it found.
func (x *explainer) search() (Why, bool) {
	for len(x.queue) > 0 && x.done == nil {
		st := x.queue[0]
		x.queue = x.queue[1:]
		x.expand(st)
	}
	if x.done == nil {
		return Why{}, false
	}
	var steps []Step
	if x.done.last != nil {
		steps = append(steps, *x.done.last)
	}
	for st := x.done.state; st >= 0; st = x.from[st].prev {
		step := x.step(st)
		step.How = x.from[st].how
		steps = append(steps, step)
	}
	slices.Reverse(steps)
	return Why{Steps: steps, End: x.done.end}, true
}

var poolNames = [numPools]string{
	poolRuntime: "(pool: the runtime's functions whose address is taken)",
	poolOther:   "(pool: the runtime's functions other objects take)",
	poolMangled: "(pool: the functions glibc keeps mangled)",
	poolLoader:  "(pool: the functions the loader looks up by name)",
}

// step names state st.
func (x *explainer) step(st int) Step {
	s := x.p.s
	if st >= 2*len(s.nodes) {
		return Step{Name: poolNames[st-2*len(s.nodes)]}
	}
	nd := s.nodes[st/2]
	o := s.objs[nd.obj]
	if nd.fn == nil {
		return Step{Object: o.Path, Name: "(its functions whose address it takes)"}
	}
	if x.names[nd.obj] == nil {
		x.names[nd.obj] = o.exportNames()
	}
	return Step{Object: o.Path, Name: x.names[nd.obj][nd.fn.Entry], Entry: nd.fn.Entry}
}

// exportNames map the functions o exports to the first name, in order,
// it exports each by.
func (o *Object) exportNames() map[uint64]string {
	out := map[uint64]string{}
	for _, name := range sortedKeys(o.Exports) {
		for _, e := range o.Exports[name] {
			if _, ok := out[e.Addr]; !ok && !e.IFunc {
				out[e.Addr] = name
			}
		}
	}
	return out
}

// finish ends the search at state st.
func (x *explainer) finish(st int, last *Step, end string) {
	if x.done == nil {
		x.done = &ending{st, last, end}
	}
}

// expand follows the edges out of state st, as the solver summed them
// (compute, reach).
func (x *explainer) expand(st int) {
	s := x.p.s
	if st >= 2*len(s.nodes) {
		x.expandPool(st - 2*len(s.nodes))
		return
	}
	n, mode := st/2, st%2
	nd := s.nodes[n]
	if nd.fn == nil {
		// What calling an object's own pool makes its caller's: its
		// members' tail calls (computeOwn).
		for _, m := range nd.members {
			if x.holds(m, true) {
				x.visit(st, x.state(m, modeUp), "an indirect call of its own reaches its function whose address it takes")
			}
		}
		return
	}
	if mode == modeOwn {
		for _, sc := range nd.fn.Syscalls {
			if sc.ABI != x86.X86_64 {
				continue
			}
			var got summary
			s.number(&got, sc.Nr, nd.obj)
			switch {
			case got.nrs.has(x.nr):
				x.finish(st, nil, fmt.Sprintf("syscall instruction at %#x", sc.Addr))
			case x.loose && got.all:
				x.finish(st, nil, fmt.Sprintf("syscall instruction at %#x, with a number the analysis does not know", sc.Addr))
			}
		}
	}
	for k, t := range s.targetsOf(n) {
		c := &nd.fn.Calls[k]
		if !c.Direct && c.Ptr.Kind == x86.Param || mode == modeUp && !c.Tail {
			continue
		}
		how := fmt.Sprintf("call at %#x", c.Addr)
		if c.Tail {
			how = fmt.Sprintf("tail call at %#x", c.Addr)
		}
		if !c.Direct {
			how += " through a pointer"
		}
		if t.unknown {
			pool := poolOther
			if s.runtime[nd.obj] {
				pool = poolRuntime
			}
			x.toPool(st, pool, how+" the analysis cannot resolve")
			if own := s.own[nd.obj]; own >= 0 && own != n && x.holds(own, true) {
				x.visit(st, x.state(own, modeUp), how+" the analysis cannot resolve")
			}
		}
		for p := range numPools {
			if t.pools&(1<<p) != 0 {
				x.toPool(st, p, how)
			}
		}
		for _, callee := range t.nodes {
			x.callee(n, mode, callee, c, how)
		}
	}
}

// callee follows node n's call c of callee: into it, where what it does
// for n's compartment (mode own: its summary, where it counts there; mode
// up: what its tail calls make its caller's), with c's arguments'
// guards, holds the call; or to where c's arguments give the number
// (syscall(2)) or the function it calls back.
func (x *explainer) callee(n, mode, callee int, c *x86.Call, how string) {
	s := x.p.s
	st := x.state(n, mode)
	counts := mode == modeOwn && s.counts(n, callee) || mode == modeUp && s.runtime[s.nodes[callee].obj]
	for _, m := range []int{modeOwn, modeUp} {
		cs := s.ups[callee]
		if m == modeOwn {
			if !counts {
				continue
			}
			cs = s.sums[callee]
		}
		if cs.params == 0 && cs.calls == 0 && cs.nfields == 0 && !x.holds(callee, m == modeUp) {
			continue
		}
		stripped := cs
		stripped.params, stripped.calls, stripped.nfields = 0, 0, 0
		var via summary
		s.absorb(n, &via, &stripped, c)
		if x.contains(via) {
			x.visit(st, x.state(callee, m), how)
			return
		}
		x.arguments(n, st, callee, &cs, c, how)
	}
}

// arguments follows what a callee makes of node n's call c's arguments:
// the number of a call (syscall(2)), or a function it calls back.
func (x *explainer) arguments(n, st, callee int, cs *summary, c *x86.Call, how string) {
	s := x.p.s
	o := s.nodes[n].obj
	last := func() *Step {
		step := x.step(x.state(callee, modeOwn))
		step.How = how
		return &step
	}
	for arg := range 6 {
		if cs.params&(1<<arg) != 0 {
			var got summary
			s.number(&got, argValue(c, arg), o)
			if x.contains(got) {
				x.finish(st, last(), fmt.Sprintf("its argument %d is the call's number", arg+1))
			}
		}
		if cs.calls&(1<<arg) == 0 {
			continue
		}
		v := argValue(c, arg)
		if v.Kind == x86.Param {
			continue
		}
		t := s.value(o, v)
		back := fmt.Sprintf("%s gives %s a function it calls back", how, last())
		if t.unknown {
			x.toPool(st, poolOther, back+", which the analysis cannot resolve")
		}
		for _, cb := range t.nodes {
			switch {
			case s.counts(n, cb) && x.holds(cb, false):
				x.visit(st, x.state(cb, modeOwn), back)
			case x.holds(cb, true):
				x.visit(st, x.state(cb, modeUp), back)
			}
		}
	}
	for _, f := range cs.fields[:cs.nfields] {
		var got summary
		s.number(&got, fieldValue(c, f), o)
		if x.contains(got) {
			x.finish(st, last(), fmt.Sprintf("the word at %d in what its argument %d points to is the call's number", f.off, f.arg+1))
		}
	}
}

// toPool follows an edge into a pool that holds the call.
func (x *explainer) toPool(st, p int, how string) {
	if x.contains(x.p.pools[p]) {
		x.visit(st, x.pool(p), how)
	}
}

// expandPool follows a pool's edges: to its functions, as join counts
// them, and to the pools their calls reach.
func (x *explainer) expandPool(p int) {
	s := x.p.s
	for _, m := range x.p.members[p].nodes {
		switch {
		case s.runtime[s.nodes[m].obj] && x.holds(m, false):
			x.visit(x.pool(p), x.state(m, modeOwn), "one of the pool")
		case x.holds(m, true):
			x.visit(x.pool(p), x.state(m, modeUp), "one of the pool")
		}
	}
	for q := range numPools {
		if q != p && x.p.pools[p].pools&(1<<q) != 0 {
			x.toPool(x.pool(p), q, "a function of the pool reaches")
		}
	}
}
