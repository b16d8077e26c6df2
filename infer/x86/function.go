package x86

import (
	"bytes"
	"slices"
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// ABI is the system-call ABI a site enters the kernel through.
type ABI uint8

// ABIs of system-call instructions.
const (
	// X86_64 is the syscall instruction.
	X86_64 ABI = iota
	// I386 is int $0x80, which takes i386 numbers even from 64-bit code.
	I386
)

// Syscall is a system-call instruction and what its number can be.
type Syscall struct {
	Addr uint64
	ABI  ABI
	// Nr is the value of rax (eax) at the instruction.
	Nr Value
	// Guard, if any, holds whenever the instruction is reached.
	Guard Guard
}

// Call is a call instruction, or a jump that leaves the function (a tail
// call).
type Call struct {
	Addr uint64
	// Direct calls have a Target; indirect ones a Ptr: what is known of
	// the address called (a Slot for a call through a RIP-relative
	// word, such as a GOT slot).
	Direct bool
	Target uint64
	Ptr    Value
	// Tail says the call is a jump: the callee returns to our caller.
	Tail bool
	// Args are the values of the argument registers at the call.
	Args [6]Value
	// Fields are the words the caller stored in the structures it
	// passes by address (arguments that point into its frame).
	Fields []ArgField
	// Guard, if any, holds whenever the call is made.
	Guard Guard
}

// Store is a value stored to a word a global names: a Slot (a word at
// a fixed address) or a Field whose path starts from one.
type Store struct {
	Dest  Value
	Value Value
}

// Check is a pointer compared with an address: Value minus Against.
type Check struct {
	Value   Value
	Against uint64
}

// Function is what the analysis found in one function's code.
type Function struct {
	// Entry and End bound the bytes read.
	Entry, End uint64
	Syscalls   []Syscall
	Calls      []Call
	// Refs are addresses of code the function names with RIP-relative
	// operands (LEA): functions whose address it takes.
	Refs []uint64
	// Imms are immediates and absolute addresses that fall in the code,
	// when Env.Absolute says they may be addresses: position-dependent
	// code takes addresses this way, but they may also be numbers.
	Imms []uint64
	// Loads are the RIP-relative words it reads as 64-bit values: the
	// GOT slots of the functions whose address it takes from there.
	Loads []uint64
	// Data are the addresses of data it takes with RIP-relative LEA:
	// where the pieces of data it may read through a pointer start.
	Data []uint64
	// Reads are the RIP-relative words of data it reads otherwise than
	// by a load of one word into a general-purpose register (Loads): by
	// a move into a vector register (a structure's copy) or a push.
	Reads []uint64
	// Stores are the 8-byte values it stores to words globals name:
	// RIP-relative words, or words reached from one.
	Stores []Store
	// Mangles are the values it mangles with glibc's PTR_MANGLE, to
	// store them: the pointers its demangled calls may reach.
	Mangles []Value
	// Checks are pointers it subtracts a constant address from, as
	// glibc checks that a FILE's vtable lies in its section of vtables
	// before calling through it.
	Checks []Check
	// Undecoded counts the bytes read that decoded to no instruction;
	// each makes every register unknown.
	Undecoded int
	// Returns says the function may return to its caller: it reaches a
	// ret, a tail call of a function that may return, or bytes it
	// cannot decode.
	Returns bool
	// Results are the values it returns, in rax at each ret: what an
	// IFUNC resolver may pick.
	Results []Value
}

// Env is what the analysis of a function is told of the rest of the
// object.
type Env struct {
	// IsCode says whether an address lies in the object's code: an
	// immediate that does is an address taken.
	IsCode func(addr uint64) bool
	// NoReturn says whether the function at an address never returns
	// (exit, abort): the code after a call of it is not reached from
	// the call. It may be nil.
	NoReturn func(addr uint64) bool
	// Absolute says the code is position-dependent: its immediates may
	// be addresses.
	Absolute bool
	// Word reads the size-byte little-endian word at an address of the
	// object, where it has one: the entries of jump tables. It may be
	// nil.
	Word func(addr uint64, size int) (uint64, bool)
}

// Code is a stretch of decoded code, such as the bytes an FDE covers,
// from which functions are read at any of its instructions.
type Code struct {
	insts []inst
	g     *graph
}

// Decode decodes code, at link-time address start, one instruction
// after the other, and splits it into basic blocks.
func Decode(code []byte, start uint64) *Code {
	insts := decodeAll(code, start)
	return &Code{insts: insts, g: newGraph(insts, start, start+uint64(len(code)))}
}

// IsStart says whether an instruction starts at addr.
func (c *Code) IsStart(addr uint64) bool {
	_, ok := c.g.index(addr)
	return ok
}

// Read analyses the function entered at addr, an instruction of c: the
// instructions reachable from there, up to the end of c, and, with
// orphans, the blocks nothing in c jumps to (landing pads, dead code),
// which start knowing nothing.
func (c *Code) Read(addr uint64, env *Env, orphans bool) *Function {
	f := &Function{Entry: addr, End: c.g.end}
	i, ok := c.g.index(addr)
	if !ok {
		return f
	}
	r := newRun(c.g, i, env)
	r.solve(orphans)
	r.collect(f)
	return f
}

// inst is one decoded instruction, or an undecodable byte (bad).
type inst struct {
	addr uint64
	op
	bad bool
}

// op is what the analysis keeps of a decoded instruction: much less than
// x86asm.Inst, for an object's millions of them.
type op struct {
	Op       x86asm.Op
	Args     [4]x86asm.Arg
	Len      int
	MemBytes int
}

// opOf keeps what the analysis needs of a decoded instruction; no
// instruction it follows has more than four operands.
func opOf(in *x86asm.Inst) op {
	return op{Op: in.Op, Args: [4]x86asm.Arg{in.Args[0], in.Args[1], in.Args[2], in.Args[3]}, Len: in.Len, MemBytes: in.MemBytes}
}

// endbr64 is decoded by x86asm as a lone REP prefix; it does nothing the
// analysis cares about.
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// pkru are RDPKRU (which writes eax and edx) and WRPKRU, which the
// decoder does not know.
var rdpkru, wrpkru = []byte{0x0f, 0x01, 0xee}, []byte{0x0f, 0x01, 0xef}

// decodeAll decodes code linearly. A byte that starts no instruction is
// skipped and marked bad.
func decodeAll(code []byte, entry uint64) []inst {
	// About four bytes an instruction.
	insts := make([]inst, 0, len(code)/4+1)
	for off := 0; off < len(code); {
		pc := entry + uint64(off)
		rest := code[off:]
		switch {
		case bytes.HasPrefix(rest, endbr64):
			insts = append(insts, inst{addr: pc, op: op{Op: x86asm.NOP, Len: 4}})
			off += 4
			continue
		case bytes.HasPrefix(rest, rdpkru):
			insts = append(insts, inst{addr: pc, op: op{Op: x86asm.RDMSR, Len: 3}})
			off += 3
			continue
		case bytes.HasPrefix(rest, wrpkru):
			insts = append(insts, inst{addr: pc, op: op{Op: x86asm.NOP, Len: 3}})
			off += 3
			continue
		}
		in, err := x86asm.Decode(rest, 64)
		if err != nil || in.Len == 0 {
			insts = append(insts, inst{addr: pc, op: op{Len: 1}, bad: true})
			off++
			continue
		}
		insts = append(insts, inst{addr: pc, op: opOf(&in)})
		off += in.Len
	}
	return insts
}

// next is the address after the instruction.
func (in *inst) next() uint64 { return in.addr + uint64(in.Len) }

// branchTarget is the target of a direct jump or call.
func (in *inst) branchTarget() (uint64, bool) {
	rel, ok := in.Args[0].(x86asm.Rel)
	if !ok {
		return 0, false
	}
	return in.next() + uint64(int64(rel)), true
}

// isJcc says whether op is a conditional branch.
func isJcc(op x86asm.Op) bool {
	switch op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL,
		x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS,
		x86asm.JCXZ, x86asm.JECXZ, x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}

// ends says whether control never falls through past the instruction.
// A byte that decodes to nothing may be anything: control goes on after
// it, knowing nothing.
func (in *inst) ends() bool {
	if in.bad {
		return false
	}
	switch in.Op {
	case x86asm.JMP, x86asm.RET, x86asm.HLT, x86asm.UD0, x86asm.UD1, x86asm.UD2,
		x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.SYSRET, x86asm.SYSEXIT:
		return true
	case x86asm.INT:
		// int3 traps; int $0x80 returns.
		imm, _ := in.Args[0].(x86asm.Imm)
		return imm == 3
	}
	return false
}

// block is a run of instructions entered only at its first.
type block struct {
	first, last int
	succs       []int
}

// graph is the control-flow graph of a stretch of code.
type graph struct {
	insts   []inst
	blocks  []*block
	blockOf []int
	entry   uint64
	end     uint64
	// hub, if not -1, is the block a jump through a jump table leads
	// to, and which leads to every block: the targets of jump tables
	// are unknown (run.solve adds the edges to it).
	hub int
}

func newGraph(insts []inst, entry, end uint64) *graph {
	g := &graph{insts: insts, entry: entry, end: end, hub: -1}
	if len(insts) == 0 {
		return g
	}
	leader := make([]bool, len(insts))
	leader[0] = true
	for i := range insts {
		in := &insts[i]
		if in.bad || in.ends() || isJcc(in.Op) {
			if i+1 < len(insts) {
				leader[i+1] = true
			}
		}
		if t, ok := g.localJump(in); ok {
			if j, exact := g.index(t); exact {
				leader[j] = true
			}
		}
	}
	g.blockOf = make([]int, len(insts))
	for i := range insts {
		if leader[i] {
			g.blocks = append(g.blocks, &block{first: i})
		}
		g.blockOf[i] = len(g.blocks) - 1
		g.blocks[len(g.blocks)-1].last = i
	}
	for _, b := range g.blocks {
		in := &insts[b.last]
		if !in.ends() && b.last+1 < len(insts) {
			b.succs = append(b.succs, g.blockOf[b.last+1])
		}
		if t, ok := g.localJump(in); ok {
			if j, exact := g.index(t); exact {
				b.succs = append(b.succs, g.blockOf[j])
			}
		}
		if jumpTable(in) {
			g.hub = len(g.blocks)
		}
	}
	if g.hub >= 0 {
		hub := &block{first: len(insts), last: len(insts) - 1}
		for j := range g.blocks {
			hub.succs = append(hub.succs, j)
		}
		g.blocks = append(g.blocks, hub)
	}
	return g
}

// index is the instruction at addr.
func (g *graph) index(addr uint64) (int, bool) {
	i := sort.Search(len(g.insts), func(i int) bool { return g.insts[i].addr >= addr })
	return i, i < len(g.insts) && g.insts[i].addr == addr
}

// jumpTable says whether an instruction is an indirect jump that may
// stay in the function: one through a register, or through memory a
// register points to (a jump through a RIP-relative word is a tail
// call). Which of them do is known from the registers (tableJump).
func jumpTable(in *inst) bool {
	if in.bad || in.Op != x86asm.JMP {
		return false
	}
	switch a := in.Args[0].(type) {
	case x86asm.Reg:
		return true
	case x86asm.Mem:
		return a.Base != x86asm.RIP
	}
	return false
}

// padding says whether a block is only no-ops: the alignment between
// pieces of code, which nothing enters.
func (g *graph) padding(b *block) bool {
	for i := b.first; i <= b.last; i++ {
		if in := &g.insts[i]; in.bad || in.Op != x86asm.NOP {
			return false
		}
	}
	return true
}

// localJump is the target of a direct jump (conditional or not) that
// stays inside the code; jumps elsewhere are tail calls.
func (g *graph) localJump(in *inst) (uint64, bool) {
	if in.bad || (in.Op != x86asm.JMP && !isJcc(in.Op)) {
		return 0, false
	}
	t, ok := in.branchTarget()
	return t, ok && g.inside(t)
}

func (g *graph) inside(addr uint64) bool { return addr >= g.entry && addr < g.end }

// run is one analysis of a graph from one entry.
type run struct {
	g   *graph
	env *Env
	// start is the entry's block.
	start int
	// view are the run's blocks where they differ from the graph's: a
	// block where the entry or a jump table's target lies inside it is
	// split there, into a first part that falls into the rest, a block
	// of the run's own, numbered from len(g.blocks) on (n counts them
	// all); rest maps a block split to the one that holds the rest.
	view map[int]*block
	rest map[int]int
	n    int
	// in are the states on entry of the blocks reached so far, by block.
	in map[int]*state
}

func newRun(g *graph, first int, env *Env) *run {
	r := &run{g: g, env: env, view: map[int]*block{}, rest: map[int]int{}, n: len(g.blocks), in: map[int]*state{}}
	r.start, _ = r.blockAt(first)
	return r
}

func (r *run) block(i int) *block {
	if b, ok := r.view[i]; ok {
		return b
	}
	return r.g.blocks[i]
}

// blockAt is the block that starts at instruction i, splitting the one
// that holds it if none does (then split is that one).
func (r *run) blockAt(i int) (at, split int) {
	b := r.g.blockOf[i]
	for {
		k, ok := r.rest[b]
		if !ok || i < r.block(k).first {
			break
		}
		b = k
	}
	blk := r.block(b)
	if blk.first == i {
		return b, -1
	}
	k := r.n
	r.n++
	r.view[k] = &block{first: i, last: blk.last, succs: blk.succs}
	r.view[b] = &block{first: blk.first, last: i - 1, succs: []int{k}}
	if old, ok := r.rest[b]; ok {
		r.rest[k] = old
	}
	r.rest[b] = k
	return k, b
}

// solve runs the analysis to its fixed point over the blocks reachable
// from the entry, which starts with the arguments as parameters, and
// with orphans from the blocks nothing jumps to (landing pads, dead
// code), which start knowing nothing, padding excepted.
func (r *run) solve(orphans bool) {
	entry := entryState()
	r.in[r.start] = &entry
	work := []int{r.start}
	if orphans {
		work = append(work, r.orphans()...)
	}
	queued := map[int]bool{}
	for _, i := range work {
		queued[i] = true
	}
	for len(work) > 0 {
		i := work[0]
		work = work[1:]
		queued[i] = false
		b := r.block(i)
		out := *r.in[i]
		if !r.step(b, &out, nil) {
			continue
		}
		succs := b.succs
		if in := &r.g.insts[max(b.last, 0)]; b.last >= b.first && jumpTable(in) && out.tableJump(&in.op) {
			targets, split, ok := r.tableTargets(&in.op, &out)
			if !ok {
				targets = []int{r.g.hub}
			}
			succs = append(slices.Clip(succs), targets...)
			for _, b := range split {
				// Its first part now falls into the rest: run it again.
				if _, reached := r.in[b]; reached && !queued[b] {
					queued[b] = true
					work = append(work, b)
				}
			}
		}
		for _, s := range succs {
			changed := false
			edge := r.edge(b, s, &out)
			if in, ok := r.in[s]; !ok {
				copied := *edge
				r.in[s], changed = &copied, true
			} else {
				changed = in.join(edge)
			}
			if changed && !queued[s] {
				queued[s] = true
				work = append(work, s)
			}
		}
	}
}

// maxTableEntries bounds the entries of a jump table tableTargets reads;
// a longer table leads to the hub.
const maxTableEntries = 4096

// tableTargets are the blocks a jump through a jump table whose address
// the analysis knows may reach: the targets its entries give, read
// until one that is no instruction, which no entry of the table can be
// (the words after its last entry are another table's, or data). A
// target in code outside the function is a jump out that leads nowhere
// here. A block a target lies inside (a case the code before it falls
// into) is split there (split lists them). Without a table to read, it
// says so.
func (r *run) tableTargets(in *op, out *state) (blocks, split []int, ok bool) {
	var t Value
	switch a := in.Args[0].(type) {
	case x86asm.Reg:
		reg, _, _ := gpr(a)
		t = out.regs[reg]
	case x86asm.Mem:
		t = out.tableRead(a, 8)
	}
	if r.env.Word == nil || t.Kind != Table || len(t.Consts) != 3 || t.Consts[1] == 4 && t.Consts[2] == 0 {
		return nil, nil, false
	}
	table, size, base := t.Consts[0], int(t.Consts[1]), t.Consts[2]
	for i := 0; ; i++ {
		if i == maxTableEntries {
			return nil, nil, false
		}
		entry, ok := r.env.Word(table+uint64(i*size), size)
		if !ok {
			break
		}
		target := entry
		if size == 4 {
			target = base + uint64(int64(int32(entry)))
		}
		if !r.env.IsCode(target) {
			break
		}
		if !r.g.inside(target) {
			continue
		}
		j, exact := r.g.index(target)
		if !exact {
			break
		}
		at, b := r.blockAt(j)
		blocks = append(blocks, at)
		if b >= 0 {
			split = append(split, b)
		}
	}
	return blocks, split, len(blocks) > 0
}

// edge is the state on the edge from block b, which ends in out, to
// its successor s: out, with the Guard the branch's direction adds.
func (r *run) edge(b *block, s int, out *state) *state {
	if s == r.g.hub || b.last < b.first {
		return out
	}
	g := edgeGuard(&r.g.insts[b.last], out.cond, r.g.insts[r.block(s).first].addr)
	if g.Mask == 0 || out.guards.has(g) {
		return out
	}
	guarded := *out
	guarded.guards.add(g)
	return &guarded
}

// orphans are the blocks no jump or fall-through leads to, other than
// padding; they start knowing nothing. A jump table's targets count
// among them: they may also be landing pads.
func (r *run) orphans() []int {
	hasPred := make([]bool, len(r.g.blocks))
	for i, b := range r.g.blocks {
		if i == r.g.hub {
			continue
		}
		for _, s := range b.succs {
			hasPred[s] = true
		}
	}
	var out []int
	for i, b := range r.g.blocks {
		if !hasPred[i] && i != r.g.hub && i != r.start && !r.g.padding(b) {
			r.in[i] = &state{}
			out = append(out, i)
		}
	}
	return out
}

// collect walks every block reached once more with its final entry
// state and records the function's facts.
func (r *run) collect(f *Function) {
	reached := make([]int, 0, len(r.in))
	for i := range r.in {
		reached = append(reached, i)
	}
	sort.Ints(reached)
	for _, i := range reached {
		s := *r.in[i]
		r.step(r.block(i), &s, f)
	}
	sortUnique(&f.Refs)
	sortUnique(&f.Imms)
	sortUnique(&f.Loads)
	sortUnique(&f.Data)
	sortUnique(&f.Reads)
}

func sortUnique(a *[]uint64) {
	sort.Slice(*a, func(i, j int) bool { return (*a)[i] < (*a)[j] })
	out := (*a)[:0]
	for i, v := range *a {
		if i == 0 || v != (*a)[i-1] {
			out = append(out, v)
		}
	}
	*a = out
}

// step applies a block's instructions to s; with f, it records what
// they do. It says whether control leaves the block at its end, which a
// call of a function that never returns prevents.
func (r *run) step(b *block, s *state, f *Function) bool {
	g := r.g
	for i := b.first; i <= b.last; i++ {
		in := &g.insts[i]
		if f != nil {
			g.record(in, s, f, r.env)
		}
		switch {
		case in.bad:
			*s = state{}
		case in.Op == x86asm.CALL:
			if t, ok := in.branchTarget(); ok && r.env.NoReturn != nil && r.env.NoReturn(t) {
				return false
			}
			s.call(in.addr)
		default:
			s.step(&in.op, in.addr)
		}
	}
	return true
}

// record notes the facts of one instruction, given the state before it.
func (g *graph) record(in *inst, s *state, f *Function, env *Env) {
	if in.bad {
		f.Undecoded++
		f.Returns = true
		return
	}
	switch in.Op {
	case x86asm.RET:
		f.Returns = true
		if !slices.ContainsFunc(f.Results, s.regs[rax].Equal) {
			f.Results = append(f.Results, s.regs[rax])
		}
	case x86asm.SYSCALL:
		f.Syscalls = append(f.Syscalls, Syscall{Addr: in.addr, ABI: X86_64, Nr: s.regs[rax], Guard: s.guards.innermost()})
	case x86asm.INT:
		if imm, _ := in.Args[0].(x86asm.Imm); imm == 0x80 {
			f.Syscalls = append(f.Syscalls, Syscall{Addr: in.addr, ABI: I386, Nr: s.regs[rax].truncate32(), Guard: s.guards.innermost()})
		}
	case x86asm.CALL, x86asm.JMP:
		g.recordCall(in, s, f)
	case x86asm.XOR:
		if r, bits, ok := regArg(in.Args[0]); ok && bits == 64 && pointerGuard(in.Args[1]) && s.regs[r].Kind != Rotated {
			f.Mangles = append(f.Mangles, s.regs[r])
		}
	case x86asm.SUB:
		a, abits, aok := regArg(in.Args[0])
		b, bbits, bok := regArg(in.Args[1])
		if aok && bok && abits == 64 && bbits == 64 {
			if p, c := s.regs[a], s.regs[b]; c.Kind == Const && len(c.Consts) == 1 && (p.Kind == Field || p.Kind == Loaded) {
				if p.Kind == Loaded {
					// The word checked, as a Field's base names it: the
					// call it was read through is no part of that.
					p = Value{Kind: Loaded, Consts: p.Consts[:1]}
				}
				f.Checks = append(f.Checks, Check{Value: p, Against: c.Consts[0]})
			}
		}
	}
	if isJcc(in.Op) {
		if t, ok := in.branchTarget(); ok && !g.inside(t) {
			guard := edgeGuard(in, s.cond, t)
			if guard.Mask == 0 {
				guard = s.guards.innermost()
			}
			f.Calls = append(f.Calls, Call{Addr: in.addr, Direct: true, Target: t, Tail: true, Args: s.argValues(), Guard: guard})
		}
	}
	if n := len(f.Calls); n > 0 && f.Calls[n-1].Addr == in.addr && f.Calls[n-1].Tail {
		c := &f.Calls[n-1]
		f.Returns = f.Returns || !c.Direct || env.NoReturn == nil || !env.NoReturn(c.Target)
	}
	g.recordRefs(in, f, env)
	if m, ok := in.Args[0].(x86asm.Mem); ok && in.Op == x86asm.MOV && in.MemBytes == 8 {
		if dest := s.load(m, in.next(), 8); dest.Kind == Slot || (dest.Kind == Field && dest.Base().Kind == Slot) {
			f.Stores = append(f.Stores, Store{Dest: dest, Value: s.operand(in.Args[1], in.next(), 8)})
		}
	}
}

// recordCall notes a call, or a jump that leaves the function. A jump
// through a jump table stays in the function.
func (g *graph) recordCall(in *inst, s *state, f *Function) {
	c := Call{Addr: in.addr, Tail: in.Op == x86asm.JMP, Args: s.argValues(), Fields: s.argFields(), Guard: s.guards.innermost()}
	if t, ok := in.branchTarget(); ok {
		if c.Tail && g.inside(t) {
			return
		}
		c.Direct, c.Target = true, t
	} else {
		if c.Tail && s.tableEntry(in.Args[0], 8) {
			return
		}
		c.Ptr = s.operand(in.Args[0], in.next(), 8)
		if c.Tail && c.Ptr.Kind == Table {
			return
		}
	}
	f.Calls = append(f.Calls, c)
}

// wordsRead are the words an instruction that reads memory at addr
// other than by a load of one word into a general-purpose register
// reads, if it may move a pointer: a push, a move of a word into a
// vector register, a move of 16 bytes or more (a structure's copy). A
// comparison moves nothing, a store writes, and a narrower read cannot
// carry a 64-bit pointer.
func wordsRead(in *inst, m x86asm.Mem, addr uint64) []uint64 {
	switch {
	case in.Op == x86asm.PUSH:
		return []uint64{addr}
	case in.Op == x86asm.CMP || in.Op == x86asm.TEST || m == in.Args[0] || in.MemBytes < 8:
		return nil
	}
	var out []uint64
	for off := 0; off < in.MemBytes; off += 8 {
		out = append(out, addr+uint64(off))
	}
	return out
}

// recordRefs notes the code addresses an instruction names and the
// words it loads through RIP-relative operands.
func (g *graph) recordRefs(in *inst, f *Function, env *Env) {
	for _, a := range in.Args {
		switch a := a.(type) {
		case nil:
			return
		case x86asm.Imm:
			if env.Absolute && env.IsCode(uint64(a)) {
				f.Imms = append(f.Imms, uint64(a))
			}
		case x86asm.Mem:
			addr, rip := ripTarget(a, in.next())
			switch {
			case rip && in.Op == x86asm.LEA && env.IsCode(addr):
				f.Refs = append(f.Refs, addr)
			case rip && in.Op == x86asm.MOV && in.MemBytes == 8 && a != in.Args[0]:
				f.Loads = append(f.Loads, addr)
			case rip && in.Op == x86asm.LEA && !env.IsCode(addr):
				f.Data = append(f.Data, addr)
			case rip && !env.IsCode(addr):
				f.Reads = append(f.Reads, wordsRead(in, a, addr)...)
			case !rip && env.Absolute && a.Base == 0 && a.Index == 0 && env.IsCode(uint64(a.Disp)):
				f.Imms = append(f.Imms, uint64(a.Disp))
			}
		}
	}
}
