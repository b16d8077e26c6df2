//go:build linux

package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"
)

// Header is what every event carries.
type Header struct {
	// TID and TGID are the thread and process the event is about.
	TID, TGID int
	// ASpace names the address space; the kernel never reuses one.
	ASpace uint64
	// Epoch is the address space's epoch (see the package doc); 0 means
	// it is not known.
	Epoch uint64
}

// Syscall is a call whose path the program did not know: a snapshot of
// the thread at system call entry. Its Stack is only valid until the next
// Read.
type Syscall struct {
	Header
	// Nr is the call's number: on x86_64, on x32 (with the x32 bit), or on
	// i386 with I386 set.
	Nr uint32
	// Serving says the call was made while its process served
	// (Options.ServingFrom).
	Serving bool
	// Regs are the user registers, struct pt_regs.
	Regs PtRegs
	// Stack holds the top of the user stack, from Regs.SP up.
	Stack []byte
	// Holes are the parts of Stack that could not be read: pages never
	// touched (a large local buffer a call is about to fill) or swapped
	// out. Their bytes in Stack are zeros and mean nothing. In address
	// order; nil when the whole copy was read.
	Holes []Hole
}

// Hole is a range of addresses, [Start, End), of a Syscall's Stack whose
// bytes are unknown.
type Hole struct {
	Start, End uint64
}

// pageSize is the granule of the program's stack copy (recorder.c's
// copy_page).
const pageSize = 4096

// I386 marks, in Syscall.Nr and CountKey.Nr, a call made through the i386
// ABI (int $0x80).
const I386 = 0x80000000

// PtRegs are the user registers as the kernel saves them at system call
// entry (struct pt_regs on x86_64).
type PtRegs struct {
	R15, R14, R13, R12, BP, BX, R11, R10, R9, R8 uint64
	AX, CX, DX, SI, DI, OrigAX, IP, CS, Flags    uint64
	SP, SS                                       uint64
}

// ASpace starts an address space user space has not seen: forget what was
// known of it; Map events with its mappings follow.
type ASpace struct {
	Header
	// Failed says the kernel could not list the mappings (another thread
	// held the address space): it is unknown until the next ASpace event.
	Failed bool
}

// MapKind says what an executable mapping holds.
type MapKind uint32

// Kinds of executable mappings.
const (
	MapFile MapKind = MapKind(recorderMapKindMAP_FILE)
	MapAnon MapKind = MapKind(recorderMapKindMAP_ANON)
	MapVDSO MapKind = MapKind(recorderMapKindMAP_VDSO)
)

// Map is one executable mapping of an address space.
type Map struct {
	Header
	Start, End uint64
	// Offset is the file offset mapped at Start.
	Offset uint64
	Kind   MapKind
	// Dev (as stat reports it) and Ino identify a mapped file; Path is
	// the path the kernel had for it, from the root of the mount
	// namespace, cut short if PathCut.
	Dev, Ino uint64
	Path     string
	PathCut  bool
}

// Unmap says that the executable mappings in [Start, End) changed: they
// are replaced by the Map events that follow.
type Unmap struct {
	Header
	Start, End uint64
	// Failed says the new mappings could not be listed: the range is
	// unknown.
	Failed bool
}

// Fork is a new task: a thread (ChildTGID equal to TGID) or a process.
type Fork struct {
	Header
	ChildTID, ChildTGID int
	ChildASpace         uint64
}

// Exec is a successful execve: the task's new address space is named in
// the header. OldTID is the thread that called execve, which the task was
// before it took over its process's id. Filename is the path, from the
// root of the mount namespace, of the file the new image executes: the
// ELF file, the interpreter of a #! script; PathCut says it was cut short.
type Exec struct {
	Header
	OldTID   int
	Filename string
	PathCut  bool
}

// Exit is the end of a task; GroupDead says it was its process's last.
type Exit struct {
	Header
	GroupDead bool
}

// Count is one call counted for a compartment, sent when the counts map
// was full.
type Count struct {
	Header
	Key CountKey
}

// Serve is a process starting to serve (Options.ServingFrom): at its
// first call of a serving call, which is made while serving, or at its
// birth (Born) from a process that served.
type Serve struct {
	Header
	Born bool
}

// ErrTimeout is what Read returns when no event came in time.
var ErrTimeout = errors.New("trace: no event")

// Read returns the next event, waiting up to timeout (forever if zero),
// as one of the event types of this package.
func (t *Tracer) Read(timeout time.Duration) (any, error) {
	if timeout > 0 {
		t.reader.SetDeadline(time.Now().Add(timeout))
	} else {
		t.reader.SetDeadline(time.Time{})
	}
	// The record's buffer is reused: snapshots are large, and most are
	// consumed at once.
	err := t.reader.ReadInto(&t.record)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, ErrTimeout
	}
	if err != nil {
		return nil, fmt.Errorf("trace: read event: %w", err)
	}
	return decode(t.record.RawSample)
}

// Pending returns how many bytes of events wait to be read.
func (t *Tracer) Pending() int { return t.reader.AvailableBytes() }

var le = binary.LittleEndian

// decode turns a ring buffer record into an event.
func decode(raw []byte) (any, error) {
	var hdr recorderEventHeader
	if len(raw) < int(unsafe.Sizeof(hdr)) {
		return nil, fmt.Errorf("trace: event of %d bytes", len(raw))
	}
	h := Header{TID: int(le.Uint32(raw[4:])), TGID: int(le.Uint32(raw[8:])), ASpace: le.Uint64(raw[16:]), Epoch: le.Uint64(raw[24:])}
	flags := le.Uint32(raw[12:])
	body := raw[unsafe.Sizeof(hdr):]
	switch recorderEventType(le.Uint32(raw)) {
	case recorderEventTypeEV_SYSCALL:
		return decodeSyscall(h, body)
	case recorderEventTypeEV_ASPACE:
		return &ASpace{Header: h, Failed: flags != 0}, nil
	case recorderEventTypeEV_MAP:
		return decodeMap(h, flags, body)
	case recorderEventTypeEV_UNMAP:
		if err := need(body, 16, "unmap"); err != nil {
			return nil, err
		}
		return &Unmap{Header: h, Start: le.Uint64(body), End: le.Uint64(body[8:]), Failed: flags != 0}, nil
	case recorderEventTypeEV_FORK:
		if err := need(body, 16, "fork"); err != nil {
			return nil, err
		}
		return &Fork{Header: h, ChildTID: int(le.Uint32(body)), ChildTGID: int(le.Uint32(body[4:])), ChildASpace: le.Uint64(body[8:])}, nil
	case recorderEventTypeEV_EXEC:
		return decodeExec(h, flags, body)
	case recorderEventTypeEV_EXIT:
		if err := need(body, 8, "exit"); err != nil {
			return nil, err
		}
		return &Exit{Header: h, GroupDead: le.Uint32(body) != 0}, nil
	case recorderEventTypeEV_COUNT:
		if err := need(body, 16, "count"); err != nil {
			return nil, err
		}
		return &Count{Header: h, Key: CountKey{Compartment: le.Uint32(body), Nr: le.Uint32(body[4:]), Serving: serving(le.Uint32(body[8:]))}}, nil
	case recorderEventTypeEV_SERVE:
		return &Serve{Header: h, Born: flags != 0}, nil
	}
	return nil, fmt.Errorf("trace: unknown event type %d", le.Uint32(raw))
}

// serving says whether the program's phase is PHASE_SERVING.
func serving(phase uint32) bool { return phase == uint32(recorderPhasePHASE_SERVING) }

func need(body []byte, n int, what string) error {
	if len(body) < n {
		return fmt.Errorf("trace: %s event of %d bytes", what, len(body))
	}
	return nil
}

func decodeSyscall(h Header, body []byte) (*Syscall, error) {
	const fixed = 16 + 8*21
	if err := need(body, fixed, "syscall"); err != nil {
		return nil, err
	}
	ev := &Syscall{Header: h, Nr: le.Uint32(body), Serving: serving(le.Uint32(body[12:]))}
	n := int(le.Uint32(body[4:]))
	holes := le.Uint32(body[8:])
	regs := (*[21]uint64)(unsafe.Pointer(&ev.Regs))
	for i := range regs {
		regs[i] = le.Uint64(body[16+8*i:])
	}
	if err := need(body, fixed+n, "syscall"); err != nil {
		return nil, err
	}
	ev.Stack = body[fixed : fixed+n]
	ev.Holes = stackHoles(ev.Regs.SP, uint64(n), holes)
	return ev, nil
}

// stackHoles turns the program's bitmap of pages that could not be read
// (bit i: the i-th page a copy of n bytes from sp spans) into ranges.
func stackHoles(sp, n uint64, pages uint32) []Hole {
	var holes []Hole
	first := sp &^ (pageSize - 1)
	for i := uint64(0); pages>>i != 0; i++ {
		if pages&(1<<i) == 0 {
			continue
		}
		start := max(first+i*pageSize, sp)
		end := min(first+(i+1)*pageSize, sp+n)
		if start >= end {
			continue
		}
		if k := len(holes) - 1; k >= 0 && holes[k].End == start {
			holes[k].End = end
			continue
		}
		holes = append(holes, Hole{Start: start, End: end})
	}
	return holes
}

func decodeMap(h Header, flags uint32, body []byte) (*Map, error) {
	const fixed = 48
	if err := need(body, fixed, "map"); err != nil {
		return nil, err
	}
	m := &Map{Header: h, Start: le.Uint64(body), End: le.Uint64(body[8:]), Ino: le.Uint64(body[24:])}
	m.Offset = le.Uint64(body[16:]) * uint64(os.Getpagesize())
	m.Dev = kernelDev(le.Uint32(body[32:]))
	m.Kind = MapKind(le.Uint32(body[36:]))
	n := int(le.Uint32(body[40:]))
	if err := need(body, fixed+n, "map"); err != nil {
		return nil, err
	}
	m.Path, m.PathCut = string(body[fixed:fixed+n]), flags != 0
	return m, nil
}

func decodeExec(h Header, flags uint32, body []byte) (*Exec, error) {
	const fixed = 8
	if err := need(body, fixed, "exec"); err != nil {
		return nil, err
	}
	n := int(le.Uint32(body[4:]))
	if err := need(body, fixed+n, "exec"); err != nil {
		return nil, err
	}
	return &Exec{Header: h, OldTID: int(le.Uint32(body)), Filename: string(body[fixed : fixed+n]), PathCut: flags != 0}, nil
}
