package bpf

import "fmt"

// Result is what a filter did with one input.
type Result struct {
	// Ret is the value the filter returned.
	Ret uint32
	// Executed counts the instructions run, the last one included.
	Executed int
	// ReadsArgs and ReadsIP report whether the path loaded a word of the
	// system call arguments or of the instruction pointer.
	ReadsArgs bool
	ReadsIP   bool
	// KernelCacheable reports whether the kernel would cache the verdict
	// for this system call number and architecture instead of running the
	// filter (seccomp_is_const_allow in kernel/seccomp.c, Linux 5.11 and
	// later): the path uses only word loads of nr and arch, ja, jeq, jgt,
	// jge and jset against a constant, and of A with a constant, and a
	// return of a constant, which is exactly SECCOMP_RET_ALLOW. The
	// kernel's exemption of the uprobe system calls depends on the system
	// call table, not on the filter, and is left out.
	KernelCacheable bool
}

// Run executes prog on in with the semantics of the kernel's classic BPF,
// as seccomp runs it. A and X start at zero. The 32-bit words of in are
// laid out as on a little-endian machine. Run does not check that the
// kernel would accept prog (see Validate), but it stops with an error,
// naming the instruction, where execution would go wrong: an opcode it does
// not know, a load outside struct seccomp_data, a scratch word out of
// range, or a jump out of the program. Besides what seccomp accepts it
// runs BPF_MOD, which the kernel allows in other classic filters.
//
// Division or modulo by zero ends the program and returns 0, which is
// SECCOMP_RET_KILL_THREAD: the kernel's translation of classic BPF
// (bpf_convert_filter in net/core/filter.c) guards every division by X
// that way, and refuses division by a constant 0 at load time. Shifts use
// the low five bits of their count, as the x86-64 and arm64 shift
// instructions that run the translated filter do. The kernel tests of this
// package check both against the running kernel.
func Run(prog []Instruction, in *SeccompData) (Result, error) {
	return run(prog, in, nil)
}

// RunCovered is Run, recording into cov, unless it is nil, which
// instructions executed and which way each conditional jump went.
func RunCovered(prog []Instruction, in *SeccompData, cov *Coverage) (Result, error) {
	if cov != nil {
		cov.fit(len(prog))
	}
	return run(prog, in, cov)
}

// machine is the state of a running filter.
type machine struct {
	a, x uint32
	mem  [MemWords]uint32
}

// run executes prog, recording coverage into cov unless it is nil. It
// handles here the instructions the kernel's cache emulator understands,
// with A in a local variable the compiler can keep in a register; any other
// instruction makes the path uncacheable and goes to step.
func run(prog []Instruction, in *SeccompData, cov *Coverage) (Result, error) {
	var m machine
	res := Result{KernelCacheable: true}
	a := uint32(0)
	pc := 0
	for pc < len(prog) {
		ins := prog[pc]
		res.Executed++
		if cov != nil {
			cov.marks[pc] |= markRun
		}
		next := pc + 1
		switch ins.Op {
		case opLdAbsW:
			w, ok := in.Word(ins.K)
			if !ok {
				return Result{}, runError(pc, ins, "loads outside struct seccomp_data")
			}
			a = w
			switch {
			case ins.K >= OffsetArgs:
				res.ReadsArgs = true
				res.KernelCacheable = false
			case ins.K >= OffsetIPLow:
				res.ReadsIP = true
				res.KernelCacheable = false
			}
		case opRetK:
			res.Ret = ins.K
			res.KernelCacheable = res.KernelCacheable && ins.K == retAllow
			return res, nil
		case opJa:
			// Checked before the addition, which could wrap where int
			// has 32 bits.
			if uint64(ins.K) >= uint64(len(prog)-next) {
				return Result{}, runError(pc, ins, "jumps past the end of the program")
			}
			next += int(ins.K)
		case ClassJmp | JmpJeq | SrcK:
			next += jump(cov, pc, ins, a == ins.K)
		case ClassJmp | JmpJgt | SrcK:
			next += jump(cov, pc, ins, a > ins.K)
		case ClassJmp | JmpJge | SrcK:
			next += jump(cov, pc, ins, a >= ins.K)
		case ClassJmp | JmpJset | SrcK:
			next += jump(cov, pc, ins, a&ins.K != 0)
		case ClassAlu | AluAnd | SrcK:
			a &= ins.K
		default:
			res.KernelCacheable = false
			m.a = a
			skip, done, err := m.step(cov, pc, ins)
			if err != nil {
				return Result{}, err
			}
			if done {
				res.Ret = m.a
				return res, nil
			}
			a = m.a
			next += skip
		}
		pc = next
	}
	return Result{}, fmt.Errorf("bpf: execution runs past the end of the program, which has %d instructions", len(prog))
}

// jump records the outcome of a conditional jump and returns how far it
// goes past the next instruction.
func jump(cov *Coverage, pc int, ins Instruction, cond bool) int {
	if cond {
		if cov != nil {
			cov.marks[pc] |= markTrue
		}
		return int(ins.Jt)
	}
	if cov != nil {
		cov.marks[pc] |= markFalse
	}
	return int(ins.Jf)
}

// step executes the instructions that the kernel's cache emulator does not
// understand. It returns how far a jump goes past the next instruction, and
// done when the program ends with A as its value.
func (m *machine) step(cov *Coverage, pc int, ins Instruction) (skip int, done bool, err error) {
	switch ins.Class() {
	case ClassLd, ClassLdx:
		return 0, false, m.load(pc, ins)
	case ClassSt, ClassStx:
		return 0, false, m.store(pc, ins)
	case ClassAlu:
		done, err := m.alu(pc, ins)
		return 0, done, err
	case ClassJmp:
		op := ins.operation()
		if ins.Op != ClassJmp|op|SrcX || op < JmpJeq || op > JmpJset {
			return 0, false, runError(pc, ins, "is not a known jump")
		}
		return jump(cov, pc, ins, compare(op, m.a, m.x)), false, nil
	}
	switch ins.Op {
	case opRetA:
		return 0, true, nil
	case opTax:
		m.x = m.a
	case opTxa:
		m.a = m.x
	default:
		return 0, false, runError(pc, ins, "is not a known instruction")
	}
	return 0, false, nil
}

// store executes st and stx.
func (m *machine) store(pc int, ins Instruction) error {
	if ins.Op != opSt && ins.Op != opStx || ins.K >= MemWords {
		return runError(pc, ins, "is not a store to M[0] to M[15]")
	}
	v := m.a
	if ins.Op == opStx {
		v = m.x
	}
	m.mem[ins.K] = v
	return nil
}

// load executes the loads other than word loads of seccomp_data.
func (m *machine) load(pc int, ins Instruction) error {
	var v uint32
	switch ins.Op {
	case opLdLen, opLdxLen:
		v = SeccompDataSize
	case opLdImm, opLdxImm:
		v = ins.K
	case opLdMem, opLdxMem:
		if ins.K >= MemWords {
			return runError(pc, ins, "reads a scratch word past M[15]")
		}
		v = m.mem[ins.K]
	default:
		return runError(pc, ins, "is a load seccomp does not run")
	}
	if ins.Class() == ClassLdx {
		m.x = v
	} else {
		m.a = v
	}
	return nil
}

// alu executes an arithmetic instruction; division by zero ends the
// program with 0.
func (m *machine) alu(pc int, ins Instruction) (done bool, err error) {
	v := ins.K
	if ins.Op&SrcX != 0 {
		v = m.x
	}
	if ins.Op != ClassAlu|ins.operation()|ins.Op&SrcX {
		return false, runError(pc, ins, "is not a known arithmetic instruction")
	}
	switch ins.Op &^ SrcX {
	case ClassAlu | AluAdd:
		m.a += v
	case ClassAlu | AluSub:
		m.a -= v
	case ClassAlu | AluMul:
		m.a *= v
	case ClassAlu | AluDiv, ClassAlu | AluMod:
		if v == 0 {
			m.a = 0
			return true, nil
		}
		if ins.operation() == AluDiv {
			m.a /= v
		} else {
			m.a %= v
		}
	case ClassAlu | AluOr:
		m.a |= v
	case ClassAlu | AluAnd:
		m.a &= v
	case ClassAlu | AluXor:
		m.a ^= v
	case ClassAlu | AluLsh:
		m.a <<= v & 31
	case ClassAlu | AluRsh:
		m.a >>= v & 31
	case ClassAlu | AluNeg:
		if ins.Op != opNeg {
			return false, runError(pc, ins, "is not a known arithmetic instruction")
		}
		m.a = -m.a
	default:
		return false, runError(pc, ins, "is not a known arithmetic instruction")
	}
	return false, nil
}

// compare evaluates a conditional jump's test.
func compare(op uint16, a, b uint32) bool {
	switch op {
	case JmpJeq:
		return a == b
	case JmpJgt:
		return a > b
	case JmpJge:
		return a >= b
	default:
		return a&b != 0
	}
}

func runError(pc int, ins Instruction, problem string) error {
	return fmt.Errorf("bpf: instruction %d (%v) %s", pc, ins, problem)
}
