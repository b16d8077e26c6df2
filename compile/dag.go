package compile

import "github.com/syscell/syscell/bpf"

// nodeID names a node of the decision DAG.
type nodeID int32

// nodeKind distinguishes returns from tests.
type nodeKind uint8

const (
	nodeRet nodeKind = iota
	nodeTest
	// nodeAndEq tests (w & mask) == k; it clobbers A with the masked value.
	nodeAndEq
)

// node is a return or a two-way test of one word. Nodes are hash-consed:
// equal nodes are one node, which merges returns and shares equal subtrees.
type node struct {
	kind nodeKind
	w    uint32 // word offset, for tests
	op   uint16 // bpf.JmpJeq, JmpJgt, JmpJge or JmpJset
	k    uint32 // compared constant, or the return value
	mask uint32 // for nodeAndEq
	t, f nodeID
}

// dag is a decision diagram under construction.
type dag struct {
	nodes []node
	index map[node]nodeID
}

func newDAG() *dag { return &dag{index: map[node]nodeID{}} }

func (d *dag) intern(n node) nodeID {
	if id, ok := d.index[n]; ok {
		return id
	}
	d.nodes = append(d.nodes, n)
	id := nodeID(len(d.nodes) - 1)
	d.index[n] = id
	return id
}

// ret is the node returning k.
func (d *dag) ret(k uint32) nodeID { return d.intern(node{kind: nodeRet, k: k}) }

// test branches on word w: to t when (w op k) holds, else to f. A test whose
// two sides agree is no test.
func (d *dag) test(w uint32, op uint16, k uint32, t, f nodeID) nodeID {
	if t == f {
		return t
	}
	return d.intern(node{kind: nodeTest, w: w, op: op, k: k, t: t, f: f})
}

// andEq branches on (w & mask) == k.
func (d *dag) andEq(w, mask, k uint32, t, f nodeID) nodeID {
	if t == f {
		return t
	}
	return d.intern(node{kind: nodeAndEq, w: w, op: bpf.JmpJeq, k: k, mask: mask, t: t, f: f})
}

// succs lists the nodes a node can jump to.
func (n *node) succs() []nodeID {
	if n.kind == nodeRet {
		return nil
	}
	return []nodeID{n.t, n.f}
}
