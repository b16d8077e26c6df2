package bpf

import (
	"encoding/binary"
	"math/rand/v2"
)

// chooser makes the decisions of the random program generator: seeded
// randomness for the differential tests, or fuzz bytes.
type chooser interface {
	IntN(n int) int
	Uint32() uint32
}

// byteChooser decides from fuzz input, then zeros once it runs out.
type byteChooser struct{ b []byte }

func (c *byteChooser) Uint32() uint32 {
	var w [4]byte
	c.b = c.b[copy(w[:], c.b):]
	return binary.LittleEndian.Uint32(w[:])
}

// IntN takes one byte for small choices and two for larger ones.
func (c *byteChooser) IntN(n int) int {
	v := int(c.next())
	if n > 256 {
		v = v<<8 | int(c.next())
	}
	return v % n
}

func (c *byteChooser) next() byte {
	if len(c.b) == 0 {
		return 0
	}
	b := c.b[0]
	c.b = c.b[1:]
	return b
}

// seeded returns a deterministic chooser.
func seeded(seed uint64) chooser { return rand.New(rand.NewPCG(seed, 0x5ec)) }

// generator writes random programs that the kernel accepts, in the shapes
// code generators produce: loads of nr, arch and arguments compared with a
// small pool of constants, chains of unconditional jumps, many equal
// returns, some arithmetic and scratch memory.
type generator struct {
	c chooser
	shape
	b      Builder
	open   []Label // created, not yet placed
	stored uint16  // scratch words stored on every path so far
}

// shape is what the generated programs are made of.
type shape struct {
	consts  []uint32 // constants to compare and compute with
	returns []uint32 // constant return values
	words   []uint32 // offsets of the words to load
}

// randomProgram returns a valid program of about size instructions, and
// the constants it compares with, from which inputs should draw. It gives
// up, returning nil, when a few tries all read scratch memory the kernel
// considers unset.
func randomProgram(c chooser, size int) ([]Instruction, []uint32) {
	s := shape{
		consts:  []uint32{0, 1, 0xffffffff, 0xc000003e, 0x40000003, c.Uint32() % 512, c.Uint32() % 512, c.Uint32()},
		returns: []uint32{retAllow, retErrno | 1, retErrno | 13, retKillProcess, retKillThread, retTrap, retLog},
		words:   []uint32{OffsetNr, OffsetNr, OffsetArch, OffsetIPLow, ArgLow(0), ArgHigh(0), ArgLow(1), ArgLow(2), ArgHigh(5)},
	}
	return generate(c, size, s), s.consts
}

// generate returns a valid program of the given shape, or nil.
func generate(c chooser, size int, s shape) []Instruction {
	for range 8 {
		g := &generator{c: c, shape: s}
		if prog := g.program(size); Validate(prog) == nil {
			return prog
		}
	}
	return nil
}

// program writes about size instructions, then places the labels still
// promised, each on a return.
func (g *generator) program(size int) []Instruction {
	if g.c.IntN(3) == 0 {
		for k := range uint32(g.c.IntN(4)) {
			g.b.Add(Instruction{Op: opSt, K: k})
			g.stored |= 1 << k
		}
	}
	for g.b.Len() < size {
		if len(g.open) > 0 && g.c.IntN(10) == 0 {
			g.bind()
		}
		g.step()
	}
	for _, l := range g.open {
		g.b.Bind(l)
		g.ret()
	}
	g.ret()
	prog, err := g.b.Program()
	if err != nil {
		panic(err)
	}
	return prog
}

// bind places one of the promised labels at the next instruction.
func (g *generator) bind() {
	i := g.c.IntN(len(g.open))
	g.b.Bind(g.open[i])
	g.open = append(g.open[:i], g.open[i+1:]...)
}

// endBlock ends straight-line code with a return or a jump, and starts
// the next block at a label, so that it is reachable.
func (g *generator) endBlock() {
	if len(g.open) == 0 {
		return
	}
	if g.c.IntN(3) == 0 {
		g.b.JumpTo(g.target())
	} else {
		g.ret()
	}
	g.bind()
}

// target picks a place ahead: the next instruction, a label already
// promised, or a new one.
func (g *generator) target() Label {
	switch n := g.c.IntN(10); {
	case n < 3:
		return Next
	case n < 6 && len(g.open) > 0:
		return g.open[g.c.IntN(len(g.open))]
	}
	l := g.b.NewLabel("l")
	g.open = append(g.open, l)
	return l
}

func (g *generator) constant() uint32 {
	if g.c.IntN(8) == 0 {
		return g.c.Uint32()
	}
	return g.consts[g.c.IntN(len(g.consts))]
}

func (g *generator) ret() {
	if g.c.IntN(10) == 0 {
		g.b.Add(Instruction{Op: opRetA})
		return
	}
	g.b.Add(Ret(g.returns[g.c.IntN(len(g.returns))]))
}

// step adds one instruction, or a few in a common pattern.
func (g *generator) step() {
	b := &g.b
	switch n := g.c.IntN(100); {
	case n < 25:
		b.Add(LoadAbs(g.words[g.c.IntN(len(g.words))]))
	case n < 55:
		op := jumpOps[g.c.IntN(len(jumpOps))]
		if g.c.IntN(8) == 0 {
			op |= SrcX
		}
		b.JumpIf(op, g.constant(), g.target(), g.target())
	case n < 62:
		// How renderers write a condition when they cannot know whether
		// its targets are near: jump over one ja, or land on one.
		skip := b.NewLabel("skip")
		b.JumpIf(jumpOps[g.c.IntN(len(jumpOps))], g.constant(), Next, skip)
		b.JumpTo(g.target())
		b.Bind(skip)
		b.JumpTo(g.target())
		if len(g.open) > 0 {
			g.bind()
		}
	case n < 75:
		g.endBlock()
	case n < 85:
		g.alu()
	default:
		g.other()
	}
}

func (g *generator) alu() {
	op := aluOps[g.c.IntN(len(aluOps))]
	if op == AluMod {
		op = AluNeg
	}
	k := g.constant()
	switch op {
	case AluDiv:
		k = max(k%7, 1)
	case AluLsh, AluRsh:
		k %= 32
	case AluNeg:
		k = 0
	}
	if op != AluNeg && g.c.IntN(4) == 0 {
		op, k = op|SrcX, 0
	}
	g.b.Add(Instruction{Op: ClassAlu | op, K: k})
}

// other adds one of the rarer instructions.
func (g *generator) other() {
	k := uint32(g.c.IntN(4))
	ops := []Instruction{
		{Op: opLdImm, K: g.constant()},
		{Op: opLdxImm, K: g.constant() % 8},
		{Op: opLdLen},
		{Op: opLdxLen},
		{Op: opTax},
		{Op: opTxa},
		{Op: opSt, K: k},
		{Op: opStx, K: k},
		{Op: opLdMem, K: k},
		{Op: opLdxMem, K: k},
	}
	ins := ops[g.c.IntN(len(ops))]
	if (ins.Op == opLdMem || ins.Op == opLdxMem) && g.stored&(1<<k) == 0 && g.c.IntN(4) != 0 {
		ins = Instruction{Op: opSt, K: k}
	}
	g.b.Add(ins)
}

// randomInput draws each word of seccomp_data from consts most of the time.
func randomInput(c chooser, consts []uint32) *SeccompData {
	word := func() uint32 {
		if c.IntN(4) == 0 {
			return c.Uint32()
		}
		return consts[c.IntN(len(consts))]
	}
	in := &SeccompData{Nr: word(), Arch: word(), IP: uint64(word())<<32 | uint64(word())}
	for i := range in.Args {
		in.Args[i] = uint64(word())<<32 | uint64(word())
	}
	return in
}

// policyProgram renders a random syscall policy the way a cautious code
// generator does, with no optimization of its own: an architecture check,
// then one rule after another, each reloading nr, each condition a
// conditional jump onto unconditional ones, each rule its own return. It
// returns the constants the policy mentions, from which inputs should
// draw.
func policyProgram(c chooser) ([]Instruction, []uint32) {
	var b Builder
	consts := []uint32{0xc000003e, 0x40000003}
	actions := []uint32{retAllow, retAllow, retErrno | 1, retErrno | 38, retLog, retTrap, retKillThread}
	kill := b.NewLabel("kill")
	b.Add(LoadAbs(OffsetArch))
	rule := b.NewLabel("rule")
	renderIf(&b, JmpJeq, 0xc000003e, rule, kill)
	for range 1 + c.IntN(40) {
		b.Bind(rule)
		rule = b.NewLabel("rule")
		nr := uint32(c.IntN(400))
		consts = append(consts, nr)
		b.Add(LoadAbs(OffsetNr))
		body, match := b.NewLabel("body"), b.NewLabel("match")
		renderIf(&b, JmpJeq, nr, body, rule)
		b.Bind(body)
		if c.IntN(3) == 0 {
			consts = append(consts, renderArgCheck(c, &b, match, rule)...)
		} else {
			b.JumpTo(match)
		}
		b.Bind(match)
		b.Add(Ret(actions[c.IntN(len(actions))]))
	}
	b.Bind(rule)
	b.Add(Ret(actions[c.IntN(len(actions))]))
	b.Bind(kill)
	b.Add(Ret(retKillProcess))
	prog, err := b.Program()
	if err != nil {
		panic(err)
	}
	return prog, consts
}

// renderIf writes "if A op k goto yes else goto no" without knowing how
// far yes and no are: a conditional jump over or onto unconditional ones.
func renderIf(b *Builder, op uint16, k uint32, yes, no Label) {
	skip := b.NewLabel("skip")
	b.JumpIf(op, k, Next, skip)
	b.JumpTo(yes)
	b.Bind(skip)
	b.JumpTo(no)
}

// renderArgCheck writes a check of a 64-bit argument, half by half, and
// returns the 32-bit constants it compares with.
func renderArgCheck(c chooser, b *Builder, yes, no Label) []uint32 {
	arg := c.IntN(6)
	v := uint64(c.Uint32()%4)<<32 | uint64(c.Uint32()%8)
	hi, lo := uint32(v>>32), uint32(v)
	low := b.NewLabel("low")
	switch c.IntN(3) {
	case 0: // args[arg] == v
		b.Add(LoadAbs(ArgHigh(arg)))
		renderIf(b, JmpJeq, hi, low, no)
		b.Bind(low)
		b.Add(LoadAbs(ArgLow(arg)))
		renderIf(b, JmpJeq, lo, yes, no)
	case 1: // args[arg] > v
		equal := b.NewLabel("equal")
		b.Add(LoadAbs(ArgHigh(arg)))
		renderIf(b, JmpJgt, hi, yes, equal)
		b.Bind(equal)
		renderIf(b, JmpJeq, hi, low, no)
		b.Bind(low)
		b.Add(LoadAbs(ArgLow(arg)))
		renderIf(b, JmpJgt, lo, yes, no)
	default: // args[arg] & 0x7 == lo, on the low half only
		b.Add(LoadAbs(ArgLow(arg)))
		b.Add(Alu(AluAnd, 0x7))
		renderIf(b, JmpJeq, lo&0x7, yes, no)
	}
	return []uint32{hi, lo}
}
