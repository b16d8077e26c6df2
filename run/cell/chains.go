package cell

import "github.com/syscell/syscell/unwind"

// maxChainNodes bounds the memory the cache of one address space takes;
// a full cache starts over.
const maxChainNodes = 1 << 16

// chains caches who calls belong to, per call chain. An unwind is a
// function of the entry instruction pointer and of the values it read, in
// order (unwind.Cursor.Inputs), as long as the same objects are mapped at
// the same addresses: a call whose entry pc and values read in turn are
// those of an earlier call unwinds to the same frames, and belongs to the
// same owner. So the cache is a trie per entry pc, each node naming the
// next value to read and branching on it.
type chains struct {
	roots map[uint64]*chainNode
	nodes int
}

type chainNode struct {
	// read is the value to read next (its Value field is unused).
	read unwind.Input
	next map[uint64]*chainNode
	// end marks the node where a path's reads end.
	end   bool
	owner owner
}

func newChains() *chains { return &chains{roots: map[uint64]*chainNode{}} }

// inputValue reads what in names for the call with registers regs.
func inputValue(in unwind.Input, regs *unwind.Regs, mem unwind.Memory) (uint64, error) {
	switch in.Kind {
	case unwind.InputRegister:
		return regs[in.Reg], nil
	case unwind.InputStack:
		return mem.Word(regs[unwind.RSP] + uint64(in.Offset))
	}
	return mem.Word(in.Addr)
}

// lookup returns the owner of a call whose path was learnt.
func (c *chains) lookup(regs *unwind.Regs, mem unwind.Memory) (owner, bool) {
	n := c.roots[regs[unwind.RA]]
	for n != nil && !n.end {
		v, err := inputValue(n.read, regs, mem)
		if err != nil {
			return owner{}, false
		}
		n = n.next[v]
	}
	if n == nil {
		return owner{}, false
	}
	return n.owner, true
}

// learn records that a call entered at pc that read inputs belongs to o.
func (c *chains) learn(pc uint64, inputs []unwind.Input, o owner) {
	if c.nodes+len(inputs)+1 > maxChainNodes {
		*c = *newChains()
	}
	n := c.roots[pc]
	if n == nil {
		n = &chainNode{}
		c.roots[pc] = n
		c.nodes++
	}
	for _, in := range inputs {
		if n.end {
			return
		}
		if n.next == nil {
			n.read, n.next = in, map[uint64]*chainNode{}
		} else if !sameRead(n.read, in) {
			// The unwind is deterministic, so this cannot happen
			// unless the address space changed under the cache.
			return
		}
		child := n.next[in.Value]
		if child == nil {
			child = &chainNode{}
			n.next[in.Value] = child
			c.nodes++
		}
		n = child
	}
	if n.next == nil {
		n.end, n.owner = true, o
	}
}

// sameRead says whether two inputs name the same value to read.
func sameRead(a, b unwind.Input) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case unwind.InputRegister:
		return a.Reg == b.Reg
	case unwind.InputStack:
		return a.Offset == b.Offset
	}
	return a.Addr == b.Addr
}
