//go:build linux

package trace

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
)

// Options configure a Tracer.
type Options struct {
	// RingBytes is the size of the ring buffer that carries events to
	// user space: a power of two, a multiple of the page size. Zero
	// means DefaultRingBytes.
	RingBytes int
	// StackBytes is how much of a thread's stack a snapshot copies,
	// from MinStackBytes to MaxStackBytes. Zero means DefaultStackBytes.
	StackBytes int
	// ServingFrom, if not empty, tells calls apart by phase (see the
	// package doc): it numbers the calls, as Syscall.Nr does, whose first
	// one starts a process's serving phase.
	ServingFrom []uint32
}

// Sizes.
const (
	DefaultRingBytes = 64 << 20
	// DefaultStackBytes covers the deepest runtime paths measured with
	// glibc 2.36: printf to an unbuffered stream needs 8,952 bytes (it
	// formats into an 8 KiB buffer on the stack), the dynamic loader's
	// start-up 1,944, getaddrinfo 1,912. Copies stop at the top of the
	// stack, so most are far smaller.
	DefaultStackBytes = 32 << 10
	// MinStackBytes is the least a snapshot copies: one word, the
	// return address of a function that has not touched the stack.
	MinStackBytes = 8
	// MaxStackBytes is the most a snapshot can copy. The program's
	// verification does not depend on the size: every size loads.
	MaxStackBytes = 64 << 10
)

// Tracer is the recorder's program, loaded and attached. While it is
// attached, every system call on the machine looks its thread up in a hash
// map; only traced tasks pay more.
type Tracer struct {
	objs   recorderObjects
	links  []link.Link
	reader *ringbuf.Reader
	record ringbuf.Record
	// nodes mirrors the paths the program was taught, so that shared
	// prefixes keep their ids.
	mu    sync.Mutex
	nodes map[recorderNodeKey]recorderNode
	next  uint64
}

// Open loads the program and attaches it to the tracepoints. Loading needs
// CAP_BPF and CAP_PERFMON, in practice root: without them the error wraps
// EPERM. The program needs BTF tracepoint programs (5.5), bpf_loop (5.17)
// and the task VMA iterator (6.7).
func Open(opts Options) (*Tracer, error) {
	spec, err := loadRecorder()
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := configure(spec, opts); err != nil {
		return nil, err
	}
	t := &Tracer{nodes: map[recorderNodeKey]recorderNode{}}
	if err := spec.LoadAndAssign(&t.objs, nil); err != nil {
		return nil, fmt.Errorf("trace: load: %w", err)
	}
	if err := t.servingFrom(opts.ServingFrom); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.attach(); err != nil {
		t.Close()
		return nil, err
	}
	if t.reader, err = ringbuf.NewReader(t.objs.Events); err != nil {
		t.Close()
		return nil, fmt.Errorf("trace: ring buffer: %w", err)
	}
	return t, nil
}

// configure sizes the ring buffer, the stack copy and the scratch areas.
func configure(spec *ebpf.CollectionSpec, opts Options) error {
	ring := opts.RingBytes
	if ring == 0 {
		ring = DefaultRingBytes
	}
	if ring&(ring-1) != 0 || ring < os.Getpagesize() {
		return fmt.Errorf("trace: ring buffer of %d bytes: not a power of two of at least a page", ring)
	}
	stack := opts.StackBytes
	if stack == 0 {
		stack = DefaultStackBytes
	}
	if stack < MinStackBytes || stack > MaxStackBytes {
		return fmt.Errorf("trace: stack copy of %d bytes: not between %d and %d", stack, MinStackBytes, MaxStackBytes)
	}
	spec.Maps[recorderMapEvents].MaxEntries = uint32(ring)
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	spec.Maps[recorderMapScratches].MaxEntries = uint32(cpus) * uint32(recorderScratchUserSCRATCH_USERS)
	if err := spec.Variables[recorderVarStackBytes].Set(uint32(stack)); err != nil {
		return fmt.Errorf("trace: set the stack copy size: %w", err)
	}
	for _, nr := range opts.ServingFrom {
		if _, ok := servingSlot(nr); !ok {
			return fmt.Errorf("trace: serving from call %#x: not a number any ABI can have", nr)
		}
	}
	phases := uint32(0)
	if len(opts.ServingFrom) > 0 {
		phases = 1
	}
	if err := spec.Variables[recorderVarPhases].Set(phases); err != nil {
		return fmt.Errorf("trace: set phases: %w", err)
	}
	return nil
}

// servingSlot is where call nr (as Syscall.Nr numbers it) is marked in the
// serving_from map, 1024 calls per ABI (recorder.c's serving_slot).
func servingSlot(nr uint32) (uint32, bool) {
	base := uint32(0)
	switch {
	case nr&I386 != 0:
		base, nr = 2048, nr&^I386
	case nr&x32Bit != 0:
		base, nr = 1024, nr&^x32Bit
	}
	return base + nr, nr < 1024
}

// x32Bit marks an x32 call's number (__X32_SYSCALL_BIT).
const x32Bit = 0x40000000

// servingFrom marks the calls that start a process's serving phase.
func (t *Tracer) servingFrom(nrs []uint32) error {
	for _, nr := range nrs {
		slot, _ := servingSlot(nr)
		if err := t.objs.ServingFrom.Put(slot, uint32(1)); err != nil {
			return fmt.Errorf("trace: serving from call %#x: %w", nr, err)
		}
	}
	return nil
}

func (t *Tracer) attach() error {
	progs := []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{
		{t.objs.OnSysEnter, ebpf.AttachTraceRawTp},
		{t.objs.OnSysExit, ebpf.AttachTraceRawTp},
		{t.objs.OnFork, ebpf.AttachTraceRawTp},
		{t.objs.OnExec, ebpf.AttachTraceRawTp},
		{t.objs.OnExit, ebpf.AttachTraceRawTp},
	}
	for _, p := range progs {
		l, err := link.AttachTracing(link.TracingOptions{Program: p.prog, AttachType: p.attach})
		if err != nil {
			return fmt.Errorf("trace: attach %s: %w", p.prog, err)
		}
		t.links = append(t.links, l)
	}
	return nil
}

// Trace starts tracing the task tid and every task it creates from now
// on.
func (t *Tracer) Trace(tid int) error {
	// 1 is TASK_TRACED (recorder.c): a task whose process has not been
	// seen serving.
	if err := t.objs.Tasks.Put(uint32(tid), uint32(1)); err != nil {
		return fmt.Errorf("trace: trace task %d: %w", tid, err)
	}
	return nil
}

// Tracing says whether any task is still traced.
func (t *Tracer) Tracing() (bool, error) {
	var key, value uint32
	it := t.objs.Tasks.Iterate()
	found := it.Next(&key, &value)
	if err := it.Err(); err != nil {
		return false, fmt.Errorf("trace: list traced tasks: %w", err)
	}
	return found, nil
}

// Close detaches and unloads the program. Events not yet read are lost.
func (t *Tracer) Close() error {
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
	}
	errs = append(errs, t.objs.Close())
	return errors.Join(errs...)
}

// Detach stops the program from running, so that no more events come and
// the counts stop changing, but keeps its maps and ring buffer to read.
func (t *Tracer) Detach() error {
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	t.links = nil
	return errors.Join(errs...)
}
