package cell

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
)

// How much of a thread's stack is copied: a little at first, which most
// cached call chains and short unwinds stay within, and more on demand,
// up to what the deepest runtime paths need (glibc's unbuffered stdio
// keeps an 8 KiB buffer on the stack below its caller).
const (
	stackFirst = 2 << 10
	stackMax   = 64 << 10
)

// memory is a stopped thread's memory as an unwind reads it: a copy of
// the top of its stack, grown on demand, and single words elsewhere. It
// implements unwind.Memory.
type memory struct {
	tid int
	sp  uint64
	// stack holds the bytes from sp copied so far, in the supervisor's
	// buffer.
	stack []byte
	// end says the copy reached the end of the stack's mapping.
	end bool
}

// readMemory reads the epoch page at epochAt and the top of the stack at
// sp into buf (of capacity stackMax), in one system call when the page is
// there; after an exec it may not be.
func readMemory(tid int, epochAt, sp uint64, buf []byte) (epoch, *memory, error) {
	var page [16]byte
	m := &memory{tid: tid, sp: sp, stack: buf[:stackFirst]}
	local := []unix.Iovec{{Base: &page[0], Len: 16}, {Base: &m.stack[0], Len: stackFirst}}
	remote := []unix.RemoteIovec{{Base: uintptr(epochAt), Len: 16}, {Base: uintptr(sp), Len: stackFirst}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err == nil && n >= 16 {
		m.settle(n - 16)
		e := epoch{cookie: binary.LittleEndian.Uint64(page[:]), count: binary.LittleEndian.Uint64(page[8:]), ok: true}
		return e, m, nil
	}
	n, err = unix.ProcessVMReadv(tid, local[1:], remote[1:], 0)
	if err != nil {
		return epoch{}, nil, fmt.Errorf("cell: read the stack of thread %d: %w", tid, err)
	}
	m.settle(n)
	return epoch{}, m, nil
}

// settle keeps the n bytes a read of the stack gave: fewer than asked
// for means the stack's mapping ends there.
func (m *memory) settle(n int) {
	m.end = n < len(m.stack)
	m.stack = m.stack[:n]
}

// Word implements unwind.Memory.
func (m *memory) Word(addr uint64) (uint64, error) {
	if addr >= m.sp && addr-m.sp+8 <= stackMax && addr-m.sp+8 > uint64(len(m.stack)) && !m.end {
		m.grow(int(addr - m.sp + 8))
	}
	if addr >= m.sp && addr-m.sp+8 <= uint64(len(m.stack)) {
		return binary.LittleEndian.Uint64(m.stack[addr-m.sp:]), nil
	}
	return attribute.ProcessMemory{Pid: m.tid}.Word(addr)
}

// grow copies more of the stack, at least up to need bytes from sp.
func (m *memory) grow(need int) {
	have := len(m.stack)
	size := min(stackMax, max(2*have, need))
	m.stack = m.stack[:size]
	local := []unix.Iovec{{Base: &m.stack[have], Len: uint64(size - have)}}
	remote := []unix.RemoteIovec{{Base: uintptr(m.sp) + uintptr(have), Len: size - have}}
	n, err := unix.ProcessVMReadv(m.tid, local, remote, 0)
	if err != nil {
		n = 0
	}
	m.stack = m.stack[:have+n]
	m.end = have+n < size
}
