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
	if err := m.Read(addr, buf[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}

// Read fills b with the process's memory at addr, all of it or fails.
func (m ProcessMemory) Read(addr uint64, b []byte) error {
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(m.Pid, local, remote, 0)
	if err != nil {
		return fmt.Errorf("read %#x of process %d: %w", addr, m.Pid, err)
	}
	if n != len(b) {
		return fmt.Errorf("read %#x of process %d: short read", addr, m.Pid)
	}
	return nil
}
