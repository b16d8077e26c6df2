package compile

import (
	"sort"
	"strings"

	"github.com/syscell/syscell/policy"
)

// group is "if cond then action", tried in order of action precedence.
type group struct {
	action policy.Action
	cond   *expr
}

// function is the verdict for one syscall number as a decision over the
// argument words: the first group whose condition holds decides, else def.
// It is kept simplified; its key identifies equal functions so that they
// share code.
type function struct {
	groups []group
	def    policy.Action
	key    string
	// probes are the inputs the cost model judges alternatives on.
	probes []words
}

// newFunction builds the function of a syscall's branches on one ABI.
func newFunction(branches []policy.Branch, def policy.Action, is32 bool) *function {
	if act, ok := unconditional(branches); ok {
		return &function{def: act, key: act.String()}
	}
	byAction := map[policy.Action][]*expr{}
	var actions []policy.Action
	for _, b := range branches {
		if _, ok := byAction[b.Action]; !ok {
			actions = append(actions, b.Action)
		}
		conj := make([]*expr, len(b.Conds))
		for i, c := range b.Conds {
			conj[i] = lowerCond(c, is32)
		}
		byAction[b.Action] = append(byAction[b.Action], and(conj...))
	}
	sort.Slice(actions, func(i, j int) bool { return actions[i].Precedes(actions[j]) })
	groups := make([]group, len(actions))
	for i, a := range actions {
		groups[i] = group{action: a, cond: or(byAction[a]...)}
	}
	f := simplify(groups, def)
	if !f.constant() {
		f.probes = probeWords(policy.ArgVectors(branches))
	}
	return f
}

// unconditional is the verdict of branches that read no argument: the one
// that takes precedence.
func unconditional(branches []policy.Branch) (policy.Action, bool) {
	best := branches[0].Action
	for _, b := range branches {
		if len(b.Conds) > 0 {
			return best, false
		}
		if b.Action.Precedes(best) {
			best = b.Action
		}
	}
	return best, true
}

// simplify drops groups that can never decide and computes the key.
func simplify(groups []group, def policy.Action) *function {
	var out []group
	for _, g := range groups {
		if g.cond == exprFalse {
			continue
		}
		if g.cond == exprTrue {
			def = g.action
			break
		}
		out = append(out, g)
	}
	// A trailing group that gives the default changes nothing.
	for len(out) > 0 && out[len(out)-1].action == def {
		out = out[:len(out)-1]
	}
	var b strings.Builder
	for _, g := range out {
		b.WriteString(g.action.String())
		b.WriteByte(':')
		b.WriteString(g.cond.key)
		b.WriteByte(';')
	}
	b.WriteString(def.String())
	return &function{groups: out, def: def, key: b.String()}
}

// constant reports whether the verdict needs no argument.
func (f *function) constant() bool { return len(f.groups) == 0 }

// substitute fixes the atoms fix knows.
func (f *function) substitute(fix func(atom) (bool, bool)) *function {
	groups := make([]group, len(f.groups))
	for i, g := range f.groups {
		groups[i] = group{action: g.action, cond: g.cond.substitute(fix)}
	}
	sub := simplify(groups, f.def)
	sub.probes = f.probes
	return sub
}

// words lists the words the function reads, in the order they are tested.
// The order is fixed so that equal sub-functions meet again and share code.
func (f *function) words() []uint32 {
	seen := map[uint32]bool{}
	var ws []uint32
	for _, g := range f.groups {
		g.cond.atoms(func(a atom) {
			if !seen[a.w] {
				seen[a.w] = true
				ws = append(ws, a.w)
			}
		})
	}
	sort.Slice(ws, func(i, j int) bool { return wordOrder(ws[i]) < wordOrder(ws[j]) })
	return ws
}

// wordOrder tests the high half of a 64-bit field before its low half: the
// high half is most often the same constant (zero) in every branch, so
// testing it first lets the branches share one test.
func wordOrder(w uint32) uint32 {
	if w%8 == 0 {
		return w + 4
	}
	return w - 4
}

// atomsOn lists the distinct atoms on word w.
func (f *function) atomsOn(w uint32) []atom {
	seen := map[atom]bool{}
	var as []atom
	for _, g := range f.groups {
		g.cond.atoms(func(a atom) {
			a.neg = false
			if a.w == w && !seen[a] {
				seen[a] = true
				as = append(as, a)
			}
		})
	}
	sort.Slice(as, func(i, j int) bool { return as[i].String() < as[j].String() })
	return as
}

// allowAs is f with its allow verdicts turned into a: the verdict of a call
// the union allows but a compartment rule decides otherwise. Groups keep
// their order, so the first that holds still decides.
func (f *function) allowAs(a policy.Action) *function {
	if a == policy.ActAllow {
		return f
	}
	groups := make([]group, len(f.groups))
	for i, g := range f.groups {
		if g.action == policy.ActAllow {
			g.action = a
		}
		groups[i] = g
	}
	def := f.def
	if def == policy.ActAllow {
		def = a
	}
	sub := simplify(groups, def)
	sub.probes = f.probes
	return sub
}
