package policy

import (
	"cmp"
	"fmt"
	"slices"
)

// ruleGroup is every syscall given one action under one set of conditions:
// the unit WriteTOML and OCI write.
type ruleGroup struct {
	action Action
	conds  []Cond   // canonical
	names  []string // sorted, once each
	pos    Pos      // of the first rule in the group, for errors
}

// groups merges the rules into one group per action and set of conditions.
// They are ordered by action, most restrictive first; then unconditional
// before conditional; then by syscall names, so that the rules about one
// syscall sit together; then by conditions. Verdicts do not change: they
// depend on which (syscall, action, conditions) branches exist, not on how
// rules list them.
func (p *Policy) groups() []ruleGroup {
	type key struct {
		action Action
		conds  string
	}
	index := map[key]int{}
	var gs []ruleGroup
	for _, r := range p.Rules {
		conds := canonicalConds(r.Conds)
		k := key{r.Action, fmt.Sprint(conds)}
		i, ok := index[k]
		if !ok {
			i = len(gs)
			index[k] = i
			gs = append(gs, ruleGroup{action: r.Action, conds: conds, pos: r.Pos})
		}
		gs[i].names = append(gs[i].names, r.Syscalls...)
	}
	for i := range gs {
		slices.Sort(gs[i].names)
		gs[i].names = slices.Compact(gs[i].names)
	}
	slices.SortFunc(gs, func(a, b ruleGroup) int {
		return cmp.Or(compareAction(a.action, b.action),
			cmp.Compare(min(len(a.conds), 1), min(len(b.conds), 1)),
			slices.Compare(a.names, b.names),
			slices.CompareFunc(a.conds, b.conds, compareCond))
	})
	return gs
}

// compareAction orders actions as Precedes does.
func compareAction(a, b Action) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Data, b.Data))
}
