package compile

import (
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
)

// lowerCond turns a 64-bit argument condition into a formula over 32-bit
// atoms. On a 32-bit ABI only the low half carries the argument, so only it
// is tested (see policy.Cond.Holds).
func lowerCond(c policy.Cond, is32 bool) *expr {
	lo := bpf.ArgLow(int(c.Arg))
	hi := bpf.ArgHigh(int(c.Arg))
	vl, vh := uint32(c.Value), uint32(c.Value>>32)
	if is32 {
		return lowerHalf(c.Op, lo, vl, uint32(c.Mask))
	}
	hiEq := lit(atom{w: hi, op: opEq, k: vh})
	switch c.Op {
	case policy.Eq:
		return and(hiEq, lit(atom{w: lo, op: opEq, k: vl}))
	case policy.Ne:
		return or(negate(hiEq), lit(atom{w: lo, op: opEq, k: vl, neg: true}))
	case policy.MaskedEq:
		return and(lowerMask(hi, uint32(c.Mask>>32), vh), lowerMask(lo, uint32(c.Mask), vl))
	}
	// Ordered comparisons: decided by the high half unless it is equal.
	strict := or(greater(hi, vh), and(hiEq, lowerHalf(c.Op, lo, vl, 0)))
	switch c.Op {
	case policy.Lt, policy.Le:
		strict = or(less(hi, vh), and(hiEq, lowerHalf(c.Op, lo, vl, 0)))
	}
	return strict
}

// lowerHalf is a condition on a single 32-bit word.
func lowerHalf(op policy.Op, w, k, mask uint32) *expr {
	switch op {
	case policy.Eq:
		return lit(atom{w: w, op: opEq, k: k})
	case policy.Ne:
		return lit(atom{w: w, op: opEq, k: k, neg: true})
	case policy.Gt:
		return greater(w, k)
	case policy.Ge:
		return atLeast(w, k)
	case policy.Lt:
		return less(w, k)
	case policy.Le:
		return negate(greater(w, k))
	}
	return lowerMask(w, mask, k)
}

func greater(w, k uint32) *expr {
	if k == ^uint32(0) {
		return exprFalse
	}
	return lit(atom{w: w, op: opGt, k: k})
}

func atLeast(w, k uint32) *expr {
	if k == 0 {
		return exprTrue
	}
	return lit(atom{w: w, op: opGe, k: k})
}

func less(w, k uint32) *expr { return negate(atLeast(w, k)) }

// lowerMask is w & mask == k, with the trivial masks folded.
func lowerMask(w, mask, k uint32) *expr {
	switch {
	case k&^mask != 0:
		return exprFalse
	case mask == 0:
		return exprTrue
	case mask == ^uint32(0):
		return lit(atom{w: w, op: opEq, k: k})
	}
	return lit(atom{w: w, op: opMask, k: k, mask: mask})
}

// negate is only ever applied to a literal or a constant.
func negate(e *expr) *expr {
	switch e.kind {
	case exTrue:
		return exprFalse
	case exFalse:
		return exprTrue
	}
	a := e.atom
	a.neg = !a.neg
	return lit(a)
}
