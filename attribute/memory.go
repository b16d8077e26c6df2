package attribute

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// ProcessMemory reads the memory of a live process, which must be stopped
// (at a seccomp notification or a ptrace stop) for the unwind to make
// sense. It implements unwind.Memory.
type ProcessMemory struct{ Pid int }

// Word implements unwind.Memory with process_vm_readv.
func (m ProcessMemory) Word(addr uint64) (uint64, error) {
	var buf [8]byte
	local := []unix.Iovec{{Base: &buf[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 8}}
	n, err := unix.ProcessVMReadv(m.Pid, local, remote, 0)
	if err != nil {
		return 0, fmt.Errorf("read %#x of process %d: %w", addr, m.Pid, err)
	}
	if n != 8 {
		return 0, fmt.Errorf("read %#x of process %d: short read", addr, m.Pid)
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}
