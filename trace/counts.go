//go:build linux

package trace

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// CountKey names what the program counts: calls of one number (as in
// Syscall.Nr) attributed to one compartment, made while serving or not
// (always not without Options.ServingFrom).
type CountKey struct {
	Compartment uint32
	Nr          uint32
	Serving     bool
}

// Counts returns the calls the program counted itself, per compartment and
// number, summed over the CPUs. Read it after Detach for final numbers.
func (t *Tracer) Counts() (map[CountKey]uint64, error) {
	counts := map[CountKey]uint64{}
	var key recorderCountKey
	var perCPU []uint64
	it := t.objs.Counts.Iterate()
	for it.Next(&key, &perCPU) {
		var n uint64
		for _, c := range perCPU {
			n += c
		}
		counts[CountKey{Compartment: key.Compartment, Nr: key.Nr, Serving: key.Phase == uint32(recorderPhasePHASE_SERVING)}] += n
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("trace: read counts: %w", err)
	}
	return counts, nil
}

// Lost counts what the program could not deliver, by reason.
type Lost struct {
	// Syscalls are calls whose snapshot did not fit in the ring buffer:
	// unattributed.
	Syscalls uint64
	// Maps are mapping events that did not fit: the address space they
	// belong to is incomplete.
	Maps uint64
	// Tasks are tasks that could not be traced: the tasks map was full.
	Tasks uint64
	// Counts are counted calls that fit neither the counts map nor the
	// ring buffer.
	Counts uint64
	// Other are fork, exec, exit, address space and serve events, and
	// processes whose serving phase could not be kept (the map of them
	// was full): their calls count as made before serving.
	Other uint64
	// Recursions are runs of the programs the kernel skipped because the
	// same program was already running on the CPU (preempted, on kernels
	// where tracepoint programs can be). The kernel counts them for every
	// task, traced or not; each may be a call, a mapping change or a task
	// event missed.
	Recursions uint64
}

// Total is the number of events lost for any reason.
func (l Lost) Total() uint64 {
	return l.Syscalls + l.Maps + l.Tasks + l.Counts + l.Other + l.Recursions
}

// Lost returns the events lost so far, summed over the CPUs.
func (t *Tracer) Lost() (Lost, error) {
	var l Lost
	fields := map[recorderLostReason]*uint64{
		recorderLostReasonLOST_SYSCALL: &l.Syscalls,
		recorderLostReasonLOST_MAP:     &l.Maps,
		recorderLostReasonLOST_TASK:    &l.Tasks,
		recorderLostReasonLOST_COUNT:   &l.Counts,
		recorderLostReasonLOST_OTHER:   &l.Other,
	}
	for reason, dst := range fields {
		var perCPU []uint64
		if err := t.objs.Lost.Lookup(uint32(reason), &perCPU); err != nil {
			return l, fmt.Errorf("trace: read lost events: %w", err)
		}
		for _, n := range perCPU {
			*dst += n
		}
	}
	for _, p := range []*ebpf.Program{t.objs.OnSysEnter, t.objs.OnSysExit, t.objs.OnFork, t.objs.OnExec, t.objs.OnExit} {
		stats, err := p.Stats()
		if err != nil {
			return l, fmt.Errorf("trace: read %s's statistics: %w", p, err)
		}
		l.Recursions += stats.RecursionMisses
	}
	return l, nil
}
