package compile

import "github.com/syscell/syscell/bpf"

// unknownWord marks an accumulator whose content is not a known word.
const unknownWord = ^uint32(0)

// emit lays the DAG out as cBPF. Nodes are placed in reverse postorder, so
// every jump goes forward. A node loads its word only when some path reaches
// it with another value in A; paths that arrive with the word already loaded
// jump past the load.
func emit(d *dag, root nodeID) ([]bpf.Instruction, error) {
	order := reversePostorder(d, root)
	entry := accumulatorAtEntry(d, order, root)
	var b bpf.Builder
	load := make([]bpf.Label, len(d.nodes))
	test := make([]bpf.Label, len(d.nodes))
	for _, id := range order {
		load[id] = b.NewLabel("load")
		test[id] = b.NewLabel("test")
	}
	target := func(from uint32, to nodeID) bpf.Label {
		if d.nodes[to].kind != nodeRet && from == d.nodes[to].w {
			return test[to]
		}
		return load[to]
	}
	for _, id := range order {
		n := d.nodes[id]
		b.Bind(load[id])
		if n.kind == nodeRet {
			b.Bind(test[id])
			b.Add(bpf.Ret(n.k))
			continue
		}
		if entry[id] != n.w {
			b.Add(bpf.LoadAbs(n.w))
		}
		b.Bind(test[id])
		exit := n.w
		if n.kind == nodeAndEq {
			b.Add(bpf.Alu(bpf.AluAnd, n.mask))
			exit = unknownWord
		}
		b.JumpIf(n.op, n.k, target(exit, n.t), target(exit, n.f))
	}
	return b.Program()
}

// reversePostorder lists the nodes reachable from root, parents first.
func reversePostorder(d *dag, root nodeID) []nodeID {
	seen := make([]bool, len(d.nodes))
	var post []nodeID
	var visit func(id nodeID)
	visit = func(id nodeID) {
		seen[id] = true
		n := d.nodes[id]
		for _, s := range n.succs() {
			if !seen[s] {
				visit(s)
			}
		}
		post = append(post, id)
	}
	visit(root)
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	return post
}

// accumulatorAtEntry finds, for each node, the word A holds on every path
// into it, or unknownWord when paths disagree.
func accumulatorAtEntry(d *dag, order []nodeID, root nodeID) []uint32 {
	entry := make([]uint32, len(d.nodes))
	reached := make([]bool, len(d.nodes))
	entry[root], reached[root] = unknownWord, true
	for _, id := range order {
		n := d.nodes[id]
		exit := n.w
		if n.kind == nodeAndEq {
			exit = unknownWord
		}
		for _, s := range n.succs() {
			switch {
			case !reached[s]:
				entry[s], reached[s] = exit, true
			case entry[s] != exit:
				entry[s] = unknownWord
			}
		}
	}
	return entry
}
