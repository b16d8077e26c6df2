package compile

import (
	"fmt"
	"sort"
	"strings"
)

// atomOp is a test of one 32-bit word of seccomp_data against a constant.
type atomOp uint8

const (
	opEq   atomOp = iota // w == k
	opGt                 // w > k
	opGe                 // w >= k
	opMask               // w & mask == k
)

// atom is a 32-bit test, possibly negated. 64-bit argument conditions become
// formulas over atoms on the two halves, so that a half shared by many
// conditions (most often "high half is zero") is tested once.
type atom struct {
	w    uint32 // offset of the word in seccomp_data
	op   atomOp
	k    uint32
	mask uint32
	neg  bool
}

func (a atom) eval(v uint32) bool {
	var r bool
	switch a.op {
	case opEq:
		r = v == a.k
	case opGt:
		r = v > a.k
	case opGe:
		r = v >= a.k
	case opMask:
		r = v&a.mask == a.k
	}
	return r != a.neg
}

func (a atom) String() string {
	neg := ""
	if a.neg {
		neg = "!"
	}
	switch a.op {
	case opGt:
		return fmt.Sprintf("%s[%d]>%x", neg, a.w, a.k)
	case opGe:
		return fmt.Sprintf("%s[%d]>=%x", neg, a.w, a.k)
	case opMask:
		return fmt.Sprintf("%s[%d]&%x=%x", neg, a.w, a.mask, a.k)
	}
	return fmt.Sprintf("%s[%d]=%x", neg, a.w, a.k)
}

type exprKind uint8

const (
	exTrue exprKind = iota
	exFalse
	exAtom
	exAnd
	exOr
)

// expr is a formula in negation normal form over atoms, kept simplified and
// canonical: nested and/or flattened, constants folded, duplicates removed,
// operands sorted. Its key identifies it, so equal formulas are shared.
type expr struct {
	kind exprKind
	atom atom
	kids []*expr
	key  string
}

var (
	exprTrue  = &expr{kind: exTrue, key: "T"}
	exprFalse = &expr{kind: exFalse, key: "F"}
)

func lit(a atom) *expr { return &expr{kind: exAtom, atom: a, key: a.String()} }

func and(kids ...*expr) *expr { return junction(exAnd, kids) }
func or(kids ...*expr) *expr  { return junction(exOr, kids) }

// junction builds a simplified and (or or) of kids.
func junction(kind exprKind, kids []*expr) *expr {
	unit, zero := exprTrue, exprFalse // and: true is neutral, false absorbs
	if kind == exOr {
		unit, zero = exprFalse, exprTrue
	}
	seen := map[string]bool{}
	var flat []*expr
	var add func(e *expr) bool
	add = func(e *expr) bool {
		switch {
		case e == zero || e.key == zero.key:
			return false
		case e.key == unit.key:
			return true
		case e.kind == kind:
			for _, k := range e.kids {
				if !add(k) {
					return false
				}
			}
			return true
		}
		if !seen[e.key] {
			seen[e.key] = true
			flat = append(flat, e)
		}
		return true
	}
	for _, k := range kids {
		if !add(k) {
			return zero
		}
	}
	switch len(flat) {
	case 0:
		return unit
	case 1:
		return flat[0]
	}
	sort.Slice(flat, func(i, j int) bool { return flat[i].key < flat[j].key })
	keys := make([]string, len(flat))
	for i, k := range flat {
		keys[i] = k.key
	}
	op := "&"
	if kind == exOr {
		op = "|"
	}
	return &expr{kind: kind, kids: flat, key: "(" + strings.Join(keys, op) + ")"}
}

// substitute replaces atoms whose value fix knows and simplifies.
func (e *expr) substitute(fix func(atom) (val, known bool)) *expr {
	switch e.kind {
	case exAtom:
		if v, ok := fix(e.atom); ok {
			if v {
				return exprTrue
			}
			return exprFalse
		}
		return e
	case exAnd, exOr:
		kids := make([]*expr, len(e.kids))
		changed := false
		for i, k := range e.kids {
			kids[i] = k.substitute(fix)
			changed = changed || kids[i] != k
		}
		if !changed {
			return e
		}
		return junction(e.kind, kids)
	}
	return e
}

// atoms calls fn for every atom of e.
func (e *expr) atoms(fn func(atom)) {
	if e.kind == exAtom {
		fn(e.atom)
	}
	for _, k := range e.kids {
		k.atoms(fn)
	}
}
