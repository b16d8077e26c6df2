package attribute

import (
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/unwind"
)

// The runtime manages memory of its own for whoever calls it: malloc
// grows and trims its heaps (brk, mmap, mprotect, madvise, munmap),
// realloc moves large blocks (mremap), pthread_create maps a stack, the
// loader zero-fills a library's bss. Which caller happens to trigger that
// depends on the state of the heap, not on what the caller asked for: a
// recording that gave such a call to the caller would give each run's
// calls to different libraries, and a policy recorded from one run would
// deny them in the next (python3's hashlib: libcrypto's malloc grew the
// heap under enforcement, never while recorded). So a memory call the
// runtime's own code makes (the frame that called the system call's
// wrapper lies in the runtime) belongs to the runtime, where it neither
// maps a file nor makes memory executable: memory of that kind gives a
// library nothing it cannot do with the memory it has, in one address
// space. A library's own calls of the wrappers (mmap of a file, a JIT's
// mprotect) stay the library's.

// housekeeping are the calls, and for mmap and mprotect, the registers
// of the arguments that decide (prot and flags).
var housekeeping = map[uint32][]unwind.Reg{
	unix.SYS_BRK:      nil,
	unix.SYS_MUNMAP:   nil,
	unix.SYS_MREMAP:   nil,
	unix.SYS_MADVISE:  nil,
	unix.SYS_MMAP:     {unwind.RDX, unwind.R10},
	unix.SYS_MPROTECT: {unwind.RDX},
}

// runtimeMemory says whether call nr, with registers regs, is memory the
// runtime may manage for itself.
func runtimeMemory(nr uint32, regs *unwind.Regs) bool {
	if _, ok := housekeeping[nr]; !ok {
		return false
	}
	prot := regs[unwind.RDX]
	switch nr {
	case unix.SYS_MMAP:
		return prot&unix.PROT_EXEC == 0 && regs[unwind.R10]&unix.MAP_ANONYMOUS != 0
	case unix.SYS_MPROTECT:
		return prot&unix.PROT_EXEC == 0
	}
	return true
}

// memoryResult is the runtime's call nr for caller. The arguments that
// decided are inputs of the outcome, so that caches of outcomes by input
// (the recorder's paths, the supervisor's chains) tell a mapping of a
// file from one of anonymous memory at the same call site. The number
// itself need not be: the entry instruction pointer, every cache's first
// key, is the syscall instruction of one wrapper, of one call.
func memoryResult(c *unwind.Cursor, caller *Object, nr uint32, regs *unwind.Regs) *Result {
	r := result(c, nil)
	r.Memory, r.Caller = true, caller
	for _, reg := range housekeeping[nr] {
		r.Inputs = append(r.Inputs, unwind.Input{Kind: unwind.InputRegister, Reg: reg, Value: regs[reg]})
	}
	return r
}
