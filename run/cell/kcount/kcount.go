// Package kcount counts the system calls of a process tree that the
// kernel lets run, by the range of code that makes each: an eBPF program
// at the raw sys_enter tracepoint (kcount.c), which the kernel reaches
// only for calls seccomp allowed or its supervisor continued. syscell run
// --stats uses it to say how many calls the filter decided in the kernel,
// beside those the supervisor decided: nothing else tells, seccomp keeps
// no counts.
//
// Loading it needs root (CAP_BPF and CAP_PERFMON), and while it is
// attached every system call of the machine pays for a hash lookup.
//
// The compiled program and its Go bindings (kcount_bpfe[lb].*) are
// generated and committed, so that building syscell needs no clang. After
// changing kcount.c, run go generate in this directory (clang and
// libbpf-dev).
package kcount

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cilium/ebpf/link"
)

// Range is code, [Start, End), that Owner made.
type Range struct {
	Start, End uint64
	Owner      uint32
}

// MaxRanges is how many ranges the program searches.
const MaxRanges = 512

// Key is what calls are counted by: the owner of the code that made them,
// and their number.
type Key struct {
	Owner uint32
	Nr    uint32
}

// Counter counts the calls of one process tree.
type Counter struct {
	objs  kcountObjects
	links []link.Link
}

// Start counts the calls of process tgid and the processes it forks from
// now on, by ranges (disjoint; calls from no range count for unknown).
func Start(tgid int, ranges []Range, unknown uint32) (*Counter, error) {
	if len(ranges) > MaxRanges {
		return nil, fmt.Errorf("kcount: %d ranges, more than %d", len(ranges), MaxRanges)
	}
	sorted := slices.Clone(ranges)
	slices.SortFunc(sorted, func(a, b Range) int { return cmpUint64(a.Start, b.Start) })
	spec, err := loadKcount()
	if err != nil {
		return nil, fmt.Errorf("kcount: %w", err)
	}
	if err := spec.Variables["nranges"].Set(uint32(len(sorted))); err != nil {
		return nil, fmt.Errorf("kcount: %w", err)
	}
	if err := spec.Variables["unknown"].Set(unknown); err != nil {
		return nil, fmt.Errorf("kcount: %w", err)
	}
	c := &Counter{}
	if err := spec.LoadAndAssign(&c.objs, nil); err != nil {
		return nil, fmt.Errorf("kcount: load: %w", err)
	}
	if err := c.fill(tgid, sorted); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.attach(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *Counter) fill(tgid int, ranges []Range) error {
	for i, r := range ranges {
		v := kcountRange{Start: r.Start, End: r.End, Owner: r.Owner}
		if err := c.objs.Ranges.Put(uint32(i), v); err != nil {
			return fmt.Errorf("kcount: range %d: %w", i, err)
		}
	}
	if err := c.objs.Tasks.Put(uint32(tgid), uint8(1)); err != nil {
		return fmt.Errorf("kcount: process %d: %w", tgid, err)
	}
	return nil
}

func (c *Counter) attach() error {
	enter, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: c.objs.CountCalls})
	if err != nil {
		return fmt.Errorf("kcount: attach to sys_enter: %w", err)
	}
	c.links = append(c.links, enter)
	fork, err := link.AttachTracing(link.TracingOptions{Program: c.objs.FollowFork})
	if err != nil {
		return fmt.Errorf("kcount: attach to sched_process_fork: %w", err)
	}
	c.links = append(c.links, fork)
	return nil
}

// Counts returns the calls counted so far, summed over the CPUs.
func (c *Counter) Counts() (map[Key]uint64, error) {
	out := map[Key]uint64{}
	var k kcountKey
	var perCPU []uint64
	it := c.objs.Counts.Iterate()
	for it.Next(&k, &perCPU) {
		var n uint64
		for _, v := range perCPU {
			n += v
		}
		out[Key{Owner: k.Owner, Nr: k.Nr}] = n
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("kcount: read the counts: %w", err)
	}
	return out, nil
}

// Close detaches the program and frees its maps.
func (c *Counter) Close() error {
	var errs []error
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	errs = append(errs, c.objs.Close())
	return errors.Join(errs...)
}
