package infer

import "github.com/syscell/syscell/infer/x86"

// solver computes every node's summary to a fixed point.
type solver struct {
	*linker
	// sums are what each node can do for its own compartment; ups what
	// its tail calls make its caller's too: a jump to the runtime
	// replaces the object's frame, and the recorder finds the caller's
	// below, which names the object's function or not (compute).
	sums, ups []summary
	// callers lists, for each node, the calls that may reach it.
	callers [][]callSite
	// fieldValues memoizes fieldsAt.
	fieldValues map[fieldKey]*summary
	// resolved are the targets of each node's calls (targetsOf).
	resolved [][]targets
	// deps[t] are the nodes whose summary read t's.
	deps  [][]int
	depOf []map[int]bool
}

func newSolver(l *linker) *solver {
	return &solver{linker: l, sums: make([]summary, len(l.nodes)), ups: make([]summary, len(l.nodes)), deps: make([][]int, len(l.nodes)),
		depOf: make([]map[int]bool, len(l.nodes)), fieldValues: map[fieldKey]*summary{}, resolved: make([][]targets, len(l.nodes))}
}

// solve recomputes nodes until none changes.
func (s *solver) solve() {
	work := s.calleesFirst()
	queued := make([]bool, len(s.nodes))
	for _, n := range work {
		queued[n] = true
	}
	for len(work) > 0 {
		n := work[0]
		work = work[1:]
		queued[n] = false
		sum, up := s.compute(n)
		if sum.equal(&s.sums[n]) && up.equal(&s.ups[n]) {
			continue
		}
		s.sums[n], s.ups[n] = sum, up
		for _, d := range s.deps[n] {
			if !queued[d] {
				queued[d] = true
				work = append(work, d)
			}
		}
	}
}

// calleesFirst orders the nodes so that a node comes after the nodes
// its calls reach, but in cycles: a postorder of the calls, so that a
// first pass computes most summaries from final ones.
func (s *solver) calleesFirst() []int {
	order := make([]int, 0, len(s.nodes))
	state := make([]uint8, len(s.nodes))
	type frame struct {
		n, i    int
		callees []int
	}
	for root := range s.nodes {
		if state[root] != 0 {
			continue
		}
		state[root] = 1
		stack := []frame{{root, 0, s.calleesOf(root)}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.i < len(top.callees) {
				next := top.callees[top.i]
				top.i++
				if state[next] == 0 {
					state[next] = 1
					stack = append(stack, frame{next, 0, s.calleesOf(next)})
				}
				continue
			}
			order = append(order, top.n)
			stack = stack[:len(stack)-1]
		}
	}
	return order
}

// calleesOf are the nodes node n's calls reach directly.
func (s *solver) calleesOf(n int) []int {
	if s.nodes[n].fn == nil {
		return s.nodes[n].members
	}
	var out []int
	for _, t := range s.targetsOf(n) {
		out = append(out, t.nodes...)
	}
	return out
}

// depend notes that n's summary reads t's.
func (s *solver) depend(n, t int) {
	if s.depOf[t] == nil {
		s.depOf[t] = map[int]bool{}
	}
	if !s.depOf[t][n] {
		s.depOf[t][n] = true
		s.deps[t] = append(s.deps[t], n)
	}
}

// compute is node n's summary from its own code and its callees'
// current summaries.
//
// A call's callee does for node n's compartment what it does for its
// own, if it is in the same object or in the runtime, and what its tail
// calls make its caller's. A tail call of an object's code (a jump out
// of a function) puts all that in n's up as well: the recorder finds
// the innermost frame outside the runtime, n's caller's, and gives the
// call to n's object only where that caller's call instruction names
// n's function (attribute/tailcall.go), which a call through a pointer
// does not. The runtime's frames count for no one, so its tail calls are
// like its calls. A syscall instruction or a call with a guard adds
// what it does under that guard.
func (s *solver) compute(n int) (summary, summary) {
	var sum, up summary
	fn := s.nodes[n].fn
	if fn == nil {
		return s.computeOwn(n)
	}
	for _, sc := range fn.Syscalls {
		if sc.ABI != x86.X86_64 {
			continue
		}
		if sc.Guard.Mask == 0 {
			s.number(&sum, sc.Nr, s.nodes[n].obj)
			continue
		}
		var got summary
		s.number(&got, sc.Nr, s.nodes[n].obj)
		sum.place(sc.Guard, &got)
	}
	runtime := s.runtime[s.nodes[n].obj]
	for i, t := range s.targetsOf(n) {
		c := &fn.Calls[i]
		if !c.Direct && c.Ptr.Kind == x86.Param {
			sum.calls |= 1 << c.Ptr.Arg
			if c.Tail && !runtime {
				up.calls |= 1 << c.Ptr.Arg
			}
			continue
		}
		s.reachUnder(n, &sum, t, c, false)
		if c.Tail && !runtime {
			s.reachUnder(n, &up, t, c, true)
		}
	}
	return sum, up
}

// reachUnder is reach for a call that may have a guard: what it
// reaches is done only where the guard holds.
func (s *solver) reachUnder(n int, sum *summary, t targets, c *x86.Call, up bool) {
	if c.Guard.Mask == 0 {
		s.reach(n, sum, t, c, up)
		return
	}
	var got summary
	s.reach(n, &got, t, c, up)
	sum.place(c.Guard, &got)
}

// targetsOf resolves, once, what each call of node n may reach.
func (s *solver) targetsOf(n int) []targets {
	if s.resolved[n] != nil {
		return s.resolved[n]
	}
	o, fn := s.nodes[n].obj, s.nodes[n].fn
	out := make([]targets, len(fn.Calls))
	bound := s.trampoline(o, fn)
	for i := range fn.Calls {
		c := &fn.Calls[i]
		if bound && c.Ptr.Kind == x86.Ret {
			// The function the trampoline bound: the caller's import,
			// whose calls the analysis follows from the caller.
			continue
		}
		if t, ok := s.checked(o, fn, c); ok {
			out[i] = t
		} else if c.Direct || c.Ptr.Kind != x86.Param {
			out[i] = s.call(o, c)
		}
	}
	s.resolved[n] = out
	return out
}

// computeOwn is the summary of a pseudo-node: what calling its members
// makes of the arguments (which are numbers, fields, callbacks); their
// calls count for the object anyway.
func (s *solver) computeOwn(n int) (summary, summary) {
	var sum, up summary
	for _, m := range s.nodes[n].members {
		s.depend(n, m)
		ms := s.sums[m]
		sum.params |= ms.params
		sum.calls |= ms.calls
		for _, f := range ms.fields[:ms.nfields] {
			sum.addField(f)
		}
		sum.all = sum.all || ms.all
		mu := s.ups[m]
		up.merge(&mu)
	}
	return sum, up
}

// number adds a call whose number is v, in object o, to sum.
func (s *solver) number(sum *summary, v x86.Value, o int) {
	switch {
	case v.Kind == x86.Const:
		for _, nr := range v.Consts {
			sum.nrs.add(nr & 0xffffffff)
		}
	case v.Kind == x86.Param:
		sum.params |= 1 << v.Arg
	case v.Kind == x86.Field && len(v.Path()) == 1 && v.Base().Kind == x86.Param:
		sum.addField(fieldDep{v.Base().Arg, v.Offset()})
	case v.Kind == x86.Field && len(v.Path()) == 1:
		f := s.globalField(o, v.Base().Consts[0], v.Offset())
		sum.merge(&f)
	default:
		sum.all = true
	}
}

// unknown marks an indirect call n makes whose targets are not known.
func (s *solver) unknown(n int, sum *summary) {
	if s.runtime[s.nodes[n].obj] {
		sum.pools |= 1 << poolRuntime
	} else {
		sum.pools |= 1 << poolOther
	}
}

// reach adds to n's summary what a call c reaching t does, with c's
// arguments for the callee's parameters and callbacks. c is nil for a
// call whose arguments are unknown. With up, the summary is what n's
// tail call c makes n's caller's: what the runtime does, whose frames
// count for no one, and what the callee's own tail calls make its
// caller's; a callee outside the runtime has a frame of its own while
// it runs, which keeps its calls in its object.
func (s *solver) reach(n int, sum *summary, t targets, c *x86.Call, up bool) {
	if t.unknown {
		s.unknown(n, sum)
		if own := s.own[s.nodes[n].obj]; own >= 0 && own != n && c != nil {
			s.reach(n, sum, targets{nodes: []int{own}}, c, up)
		}
	}
	sum.pools |= t.pools
	for _, callee := range t.nodes {
		s.depend(n, callee)
		if up && s.runtime[s.nodes[callee].obj] || !up && s.counts(n, callee) {
			s.absorb(n, sum, &s.sums[callee], c)
		}
		s.absorb(n, sum, &s.ups[callee], c)
	}
}

// absorb adds what a callee does (cs), called by node n with call c, to
// sum: its calls, those its parameters, callbacks and fields give with
// c's arguments, and what it does under guards c's arguments do not
// rule out: a guard on an argument n passes on becomes n's.
func (s *solver) absorb(n int, sum *summary, cs *summary, c *x86.Call) {
	sum.nrs.union(&cs.nrs)
	sum.all = sum.all || cs.all
	sum.pools |= cs.pools
	o := s.nodes[n].obj
	for arg := range 6 {
		if cs.params&(1<<arg) != 0 {
			s.number(sum, argValue(c, arg), o)
		}
		if cs.calls&(1<<arg) != 0 {
			s.callback(n, sum, argValue(c, arg))
		}
	}
	for _, f := range cs.fields[:cs.nfields] {
		s.number(sum, fieldValue(c, f), o)
	}
	for _, g := range cs.guarded {
		h, ok, never := g.guard.Through(argValue(c, int(g.guard.Arg)))
		switch {
		case never:
		case ok:
			sum.addGuarded(h, &g.nrs, g.all, g.pools)
		default:
			sum.unguard(&g)
		}
	}
}

// fieldValue is the value a call gives to a field: the word its caller
// stored in its frame where the argument points, or the same field of
// the caller's own argument.
func fieldValue(c *x86.Call, f fieldDep) x86.Value {
	if c == nil {
		return x86.Value{}
	}
	switch a := c.Args[f.arg]; a.Kind {
	case x86.Stack:
		for _, af := range c.Fields {
			if af.Arg == f.arg && af.Offset == f.off {
				return af.Value
			}
		}
	case x86.Param:
		return x86.FieldOf(a, f.off)
	}
	return x86.Value{}
}

// argValue is argument arg of call c, Unknown without a call.
func argValue(c *x86.Call, arg int) x86.Value {
	if c == nil {
		return x86.Value{}
	}
	return c.Args[arg]
}

// callback adds to n's summary a call of the function v points to, made
// by a callee with arguments the analysis does not know.
func (s *solver) callback(n int, sum *summary, v x86.Value) {
	if v.Kind == x86.Param {
		sum.calls |= 1 << v.Arg
		return
	}
	s.reach(n, sum, s.value(s.nodes[n].obj, v), nil, false)
}
