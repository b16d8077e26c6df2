package record

import (
	"github.com/syscell/syscell/syscalls"
	"github.com/syscell/syscell/trace"
)

// callName returns the name and ABI of a call numbered as the recorder
// numbers them (trace.Syscall.Nr); ok is false for a number no ABI
// defines, which the kernel answers with ENOSYS.
func callName(nr uint32) (name string, arch syscalls.Arch, ok bool) {
	switch {
	case nr&trace.I386 != 0:
		arch, nr = syscalls.I386, nr&^trace.I386
	case nr&syscalls.X32Bit != 0:
		arch = syscalls.X32
	default:
		arch = syscalls.X86_64
	}
	name, ok = syscalls.Name(arch, nr)
	return name, arch, ok
}
