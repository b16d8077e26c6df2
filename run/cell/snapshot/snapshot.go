// Package snapshot copies, in the kernel, where each thread of a process
// tree waits for its supervisor: as the scheduler switches out a thread
// with a seccomp user notification pending, an eBPF program at the
// sched_switch tracepoint (snapshot.c) copies the thread's user
// registers and the top of its user stack, stamped with the
// notification's id, into a map the supervisor has mapped. The
// supervisor then finds the caller of a supervised call with no system
// call of its own, where reading /proc/TID/syscall and the stack
// (process_vm_readv) would cost more than the notification's round trip.
//
// Loading it needs root (CAP_BPF and CAP_PERFMON); without it the
// supervisor reads /proc. While it is attached every context switch of
// the machine pays for a hash lookup.
//
// The compiled program and its Go bindings (snapshot_bpfe[lb].*) are
// generated and committed, so that building syscell needs no clang. After
// changing snapshot.c, run go generate in this directory (clang and
// libbpf-dev).
package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Regs are a thread's user registers as its system call entered the
// kernel: the call's number and arguments, the stack and instruction
// pointers, and the callee-saved registers an unwind may need.
type Regs struct {
	Nr, DI, SI, DX, R10, R8, R9 uint64
	SP, IP                      uint64
	BX, BP, R12, R13, R14, R15  uint64
}

// Snapshot is where a thread waits.
type Snapshot struct {
	// Tgid is the thread's process, and Started when it started (in the
	// kernel's monotonic clock): an earlier process with the same id
	// started at another time.
	Tgid    int
	Started uint64
	Regs    Regs
	// Epoch is what the audit library's epoch page held, where EpochOK.
	Epoch   [2]uint64
	EpochOK bool
	// Stack is the top of the stack, from Regs.SP up.
	Stack []byte
}

// StackBytes is the most of a stack a snapshot holds.
const StackBytes = len(snapshotSnapshot{}.Stack)

// Snapshots takes the snapshots of one process tree.
type Snapshots struct {
	objs  snapshotObjects
	links []link.Link
	mem   *ebpf.Memory
	slots uint32
}

// Load loads the programs, which take snapshots of the processes
// watched; epochAt is where the audit library's epoch page lies in each,
// 0 for none. It takes tens of milliseconds (the kernel's BTF is read
// for the offsets of its structures).
func Load(epochAt uint64) (*Snapshots, error) {
	spec, err := loadSnapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if err := spec.Variables["epoch_at"].Set(epochAt); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	s := &Snapshots{slots: spec.Maps[snapshotMapSnapshots].MaxEntries}
	if err := spec.LoadAndAssign(&s.objs, nil); err != nil {
		return nil, fmt.Errorf("snapshot: load: %w", err)
	}
	if err := s.attach(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Snapshots) attach() error {
	var err error
	if s.mem, err = s.objs.Snapshots.Memory(); err != nil {
		return fmt.Errorf("snapshot: map the snapshots: %w", err)
	}
	for _, prog := range []*ebpf.Program{s.objs.TakeSnapshot, s.objs.FollowFork} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return fmt.Errorf("snapshot: attach %s: %w", prog, err)
		}
		s.links = append(s.links, l)
	}
	return nil
}

// Watch takes snapshots of the threads of process tgid, and of the
// processes it forks from now on.
func (s *Snapshots) Watch(tgid int) error {
	if err := s.objs.Tasks.Put(uint32(tgid), uint8(1)); err != nil {
		return fmt.Errorf("snapshot: watch process %d: %w", tgid, err)
	}
	return nil
}

// The layout of a slot, as the kernel lays out the array's values.
const (
	stride     = (unsafe.Sizeof(snapshotSnapshot{}) + 7) &^ 7
	offTid     = unsafe.Offsetof(snapshotSnapshot{}.Tid)
	offStack   = unsafe.Offsetof(snapshotSnapshot{}.Stack)
	headerSize = offStack - offTid
)

// Take returns the snapshot of thread tid waiting for the notification
// id, its stack copied into buf; false where there is none, or not yet:
// the thread has not been switched out since the kernel queued the
// notification, or another thread's snapshot took its slot.
func (s *Snapshots) Take(tid int, id uint64, buf []byte) (Snapshot, bool) {
	base := int64(uint32(tid)%s.slots) * int64(stride)
	before, ok := s.seq(base)
	if !ok || before%2 == 1 {
		return Snapshot{}, false
	}
	var header [headerSize]byte
	if _, err := s.mem.ReadAt(header[:], base+int64(offTid)); err != nil {
		return Snapshot{}, false
	}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(header[8*i:]) }
	if uint32(word(0)) != uint32(tid) || word(2) != id {
		return Snapshot{}, false
	}
	snap := decode(word)
	n := min(int(binary.LittleEndian.Uint32(header[headerSize-4:])), len(buf))
	snap.Stack = buf[:n]
	if _, err := s.mem.ReadAt(snap.Stack, base+int64(offStack)); err != nil {
		return Snapshot{}, false
	}
	if after, ok := s.seq(base); !ok || after != before {
		return Snapshot{}, false
	}
	return snap, true
}

// decode reads a slot's header, word i of which word gives: the tid and
// the tgid, when the process started, the id, 16 registers, the epoch.
func decode(word func(int) uint64) Snapshot {
	const regs = 3
	r := func(i int) uint64 { return word(regs + i) }
	return Snapshot{
		Tgid:    int(word(0) >> 32),
		Started: word(1),
		Regs: Regs{
			Nr: r(0), DI: r(1), SI: r(2), DX: r(3), R10: r(4), R8: r(5), R9: r(6),
			SP: r(7), IP: r(8),
			BX: r(9), BP: r(10), R12: r(11), R13: r(12), R14: r(13), R15: r(14),
		},
		Epoch:   [2]uint64{word(regs + 16), word(regs + 17)},
		EpochOK: uint32(word(regs+18)) != 0,
	}
}

func (s *Snapshots) seq(base int64) (uint64, bool) {
	var b [8]byte
	if _, err := s.mem.ReadAt(b[:], base); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// Close detaches the programs and frees the maps.
func (s *Snapshots) Close() error {
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	errs = append(errs, s.objs.Close())
	return errors.Join(errs...)
}
