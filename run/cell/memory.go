package cell

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

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
		return epochOf(page), m, nil
	}
	n, err = unix.ProcessVMReadv(tid, local[1:], remote[1:], 0)
	if err != nil {
		return epoch{}, nil, fmt.Errorf("cell: read the stack of thread %d: %w", tid, err)
	}
	m.settle(n)
	return epoch{}, m, nil
}

// readEpoch reads the epoch page of thread tid at epochAt.
func readEpoch(tid int, epochAt uint64) epoch {
	var page [16]byte
	local := []unix.Iovec{{Base: &page[0], Len: 16}}
	remote := []unix.RemoteIovec{{Base: uintptr(epochAt), Len: 16}}
	if n, err := unix.ProcessVMReadv(tid, local, remote, 0); err != nil || n < 16 {
		return epoch{}
	}
	return epochOf(page)
}

func epochOf(page [16]byte) epoch {
	return epoch{cookie: binary.LittleEndian.Uint64(page[:]), count: binary.LittleEndian.Uint64(page[8:]), ok: true}
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

// wordBatch is how many words readWords asks for at a time.
const wordBatch = 256

// readWords reads the NULL-terminated array of words at at, of thread
// tid, up to max words (more is an error), a batch at a time, each batch
// stopping at a page's end: a read that crosses into an unmapped page
// fails whole.
func readWords(tid int, at uint64, max int) ([]uint64, error) {
	var out []uint64
	var buf [wordBatch * 8]byte
	for len(out) < max {
		n := min(wordBatch, max-len(out), int(4096-at%4096)/8)
		if n == 0 {
			n = 1
		}
		got, err := readAt(tid, at, buf[:8*n])
		if err != nil {
			return nil, err
		}
		for i := 0; i+8 <= got; i += 8 {
			w := binary.LittleEndian.Uint64(buf[i:])
			if w == 0 {
				return out, nil
			}
			out = append(out, w)
		}
		at += uint64(got)
	}
	return nil, fmt.Errorf("more than %d words at %#x", max, at)
}

// stringChunk is how much of each string readStrings reads at first.
const stringChunk = 256

// spanMax bounds the memory one read of readStrings spans.
const spanMax = 64 << 10

// readStrings reads the NUL-terminated strings at ptrs, of thread tid,
// each up to max bytes. An exec's environment lies in a few places (the
// caller's stack, a heap), so the strings are read by span of nearby
// addresses, one system call each: the kernel pins each page of a read
// once, where a read of one iovec a string pinned a page per string.
// What a span's read does not reach (a string past its end, or past a
// hole in the memory) is read alone.
func readStrings(tid int, ptrs []uint64, max int) ([]string, error) {
	out := make([]string, len(ptrs))
	order := make([]int, len(ptrs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ptrs[a], ptrs[b]) })
	for len(order) > 0 {
		start, n := ptrs[order[0]], 1
		for n < len(order) && ptrs[order[n]]-start < spanMax {
			n++
		}
		span := order[:n]
		order = order[n:]
		last := ptrs[span[n-1]]
		buf := make([]byte, min(last+stringChunk, last|4095+1)-start)
		got, _ := readAt(tid, start, buf)
		for _, i := range span {
			if off := ptrs[i] - start; off < uint64(got) {
				if j := bytes.IndexByte(buf[off:got], 0); j >= 0 {
					out[i] = string(buf[off : off+uint64(min(j, max))])
					continue
				}
			}
			s, err := readString(attribute.ProcessMemory{Pid: tid}, ptrs[i], max)
			if err != nil {
				return nil, fmt.Errorf("read the strings of thread %d: %w", tid, err)
			}
			out[i] = s
		}
	}
	return out, nil
}

// readAt reads up to len(b) bytes at at, of thread tid: fewer where the
// memory ends.
func readAt(tid int, at uint64, b []byte) (int, error) {
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(at), Len: len(b)}}
	n, err := unix.ProcessVMReadv(tid, local, remote, 0)
	if err != nil {
		return 0, fmt.Errorf("read %#x of thread %d: %w", at, tid, err)
	}
	if n < 8 {
		return 0, fmt.Errorf("read %#x of thread %d: %d bytes", at, tid, n)
	}
	return n, nil
}
