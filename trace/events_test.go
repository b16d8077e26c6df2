//go:build linux

package trace

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// raw encodes an event as the program lays it out: the bpf2go types mirror
// recorder.c's structs, so decode is checked against the C layout.
func raw(t *testing.T, ev any, tail []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, ev); err != nil {
		t.Fatal(err)
	}
	return append(b.Bytes(), tail...)
}

func header(typ recorderEventType, flags uint32) recorderEventHeader {
	return recorderEventHeader{Type: uint32(typ), Tid: 12, Tgid: 10, Flags: flags, Aspace: 0xa5, Epoch: 7}
}

var hdr = Header{TID: 12, TGID: 10, ASpace: 0xa5, Epoch: 7}

func TestDecode(t *testing.T) {
	if unsafe.Sizeof(PtRegs{}) != unsafe.Sizeof(recorderSyscallEvent{}.Regs) {
		t.Fatal("PtRegs and the program's registers differ in size")
	}
	type sysFixed struct {
		H        recorderEventHeader
		Nr       uint32
		StackLen uint32
		Holes    uint32
		Phase    uint32
		Regs     [21]uint64
	}
	regs := [21]uint64{}
	for i := range regs {
		regs[i] = uint64(i + 1)
	}
	type mapFixed struct {
		H                      recorderEventHeader
		Start, End, Pgoff, Ino uint64
		Dev, Kind, PathLen     uint32
		Pad                    uint32
	}
	type execFixed struct {
		H                   recorderEventHeader
		OldTid, FilenameLen uint32
	}
	for _, c := range []struct {
		name string
		raw  []byte
		want any
	}{
		{"syscall", raw(t, sysFixed{H: header(recorderEventTypeEV_SYSCALL, 0), Nr: 39, StackLen: 3, Regs: regs}, []byte{1, 2, 3}),
			&Syscall{Header: hdr, Nr: 39, Regs: *(*PtRegs)(unsafe.Pointer(&regs)), Stack: []byte{1, 2, 3}}},
		{"syscall serving", raw(t, sysFixed{H: header(recorderEventTypeEV_SYSCALL, 0), Nr: 232, Phase: uint32(recorderPhasePHASE_SERVING), Regs: regs}, nil),
			&Syscall{Header: hdr, Nr: 232, Serving: true, Regs: *(*PtRegs)(unsafe.Pointer(&regs)), Stack: []byte{}}},
		{"aspace", raw(t, header(recorderEventTypeEV_ASPACE, 1), nil), &ASpace{Header: hdr, Failed: true}},
		{"map", raw(t, mapFixed{H: header(recorderEventTypeEV_MAP, 0), Start: 0x1000, End: 0x3000, Pgoff: 2, Ino: 99, Dev: 0xfe<<20 | 1, Kind: uint32(recorderMapKindMAP_FILE), PathLen: 6}, []byte("/a/b.c")),
			&Map{Header: hdr, Start: 0x1000, End: 0x3000, Offset: 2 * uint64(unix.Getpagesize()), Kind: MapFile, Dev: unix.Mkdev(0xfe, 1), Ino: 99, Path: "/a/b.c"}},
		{"unmap", raw(t, recorderUnmapEvent{H: header(recorderEventTypeEV_UNMAP, 1), Start: 0x1000, End: 0x2000}, nil),
			&Unmap{Header: hdr, Start: 0x1000, End: 0x2000, Failed: true}},
		{"fork", raw(t, recorderForkEvent{H: header(recorderEventTypeEV_FORK, 0), ChildTid: 13, ChildTgid: 13, ChildAspace: 0xb6}, nil),
			&Fork{Header: hdr, ChildTID: 13, ChildTGID: 13, ChildASpace: 0xb6}},
		{"exec", raw(t, execFixed{H: header(recorderEventTypeEV_EXEC, 0), OldTid: 11, FilenameLen: 4}, []byte("/bin")),
			&Exec{Header: hdr, OldTID: 11, Filename: "/bin"}},
		{"exit", raw(t, recorderExitEvent{H: header(recorderEventTypeEV_EXIT, 0), GroupDead: 1}, nil), &Exit{Header: hdr, GroupDead: true}},
		{"count", raw(t, recorderCountEvent{H: header(recorderEventTypeEV_COUNT, 0), Compartment: 4, Nr: 39}, nil),
			&Count{Header: hdr, Key: CountKey{Compartment: 4, Nr: 39}}},
		{"count serving", raw(t, recorderCountEvent{H: header(recorderEventTypeEV_COUNT, 0), Compartment: 4, Nr: 39, Phase: uint32(recorderPhasePHASE_SERVING)}, nil),
			&Count{Header: hdr, Key: CountKey{Compartment: 4, Nr: 39, Serving: true}}},
		{"serve", raw(t, header(recorderEventTypeEV_SERVE, 0), nil), &Serve{Header: hdr}},
		{"serve born", raw(t, header(recorderEventTypeEV_SERVE, 1), nil), &Serve{Header: hdr, Born: true}},
	} {
		got, err := decode(c.raw)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		// Every event cut short is an error, never a panic.
		for n := range len(c.raw) - len(tailOf(c.want)) {
			if _, err := decode(c.raw[:n]); err == nil {
				t.Errorf("%s cut to %d bytes decoded", c.name, n)
			}
		}
	}
}

// tailOf returns the variable part of an event, which may be cut.
func tailOf(ev any) []byte {
	switch e := ev.(type) {
	case *Syscall:
		return e.Stack
	case *Map:
		return []byte(e.Path)
	case *Exec:
		return []byte(e.Filename)
	}
	return nil
}

func TestDecodeUnknown(t *testing.T) {
	if _, err := decode(raw(t, header(99, 0), nil)); err == nil {
		t.Error("unknown event type decoded")
	}
}

// TestDecodeStackHoles checks how the program's bitmap of pages that
// could not be read becomes ranges of the copy: the first and last pages
// are partial, neighbours merge, and bits beyond the copy mean nothing.
func TestDecodeStackHoles(t *testing.T) {
	const sp = 0x7ffd0f00
	for _, c := range []struct {
		n     uint64
		pages uint32
		want  []Hole
	}{
		{0x2200, 0, nil},
		{0x2200, 0b001, []Hole{{sp, 0x7ffd1000}}},
		{0x2200, 0b101, []Hole{{sp, 0x7ffd1000}, {0x7ffd2000, 0x7ffd3000}}},
		{0x2200, 0b1000, []Hole{{0x7ffd3000, sp + 0x2200}}},
		{0x2200, 0b011, []Hole{{sp, 0x7ffd2000}}},
		{0x2200, 0b10000, nil},
		{0x80, 0b1, []Hole{{sp, sp + 0x80}}},
		{0, 0b1, nil},
		{0x10000, 1 << 16, []Hole{{0x7ffe0000, sp + 0x10000}}},
	} {
		if got := stackHoles(sp, c.n, c.pages); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%#x bytes, pages %#b: %#x, want %#x", c.n, c.pages, got, c.want)
		}
	}
	// Decoded with the event.
	type sysFixed struct {
		H                   recorderEventHeader
		Nr, StackLen, Holes uint32
		Phase               uint32
		Regs                PtRegs
	}
	ev, err := decode(raw(t, sysFixed{H: header(recorderEventTypeEV_SYSCALL, 0), Nr: 89, StackLen: 0x2200, Holes: 0b10, Regs: PtRegs{SP: sp}}, make([]byte, 0x2200)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Hole{{0x7ffd1000, 0x7ffd2000}}; !reflect.DeepEqual(ev.(*Syscall).Holes, want) {
		t.Errorf("decoded holes %#x, want %#x", ev.(*Syscall).Holes, want)
	}
}
