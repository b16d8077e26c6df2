//go:build linux

package sysenter

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/link"
)

// Counter is the program of sysenter.c, loaded and attached to the raw
// sys_enter tracepoint. While it is attached, every system call of every
// process on the machine runs it.
type Counter struct {
	objs sysenterObjects
	link link.Link
}

// Attach loads the program to count the calls of system call nr and
// attaches it. Loading needs CAP_BPF and CAP_PERFMON, in practice root:
// without them the error wraps EPERM. A kernel without raw tracepoint
// programs gives an error wrapping ebpf.ErrNotSupported.
func Attach(nr uint64) (*Counter, error) {
	spec, err := loadSysenter()
	if err != nil {
		return nil, fmt.Errorf("sysenter: %w", err)
	}
	if err := spec.Variables[sysenterVarTargetNr].Set(nr); err != nil {
		return nil, fmt.Errorf("sysenter: set the system call to count: %w", err)
	}
	var c Counter
	if err := spec.LoadAndAssign(&c.objs, nil); err != nil {
		return nil, fmt.Errorf("sysenter: load: %w", err)
	}
	c.link, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: c.objs.CountSysEnter})
	if err != nil {
		c.objs.Close()
		return nil, fmt.Errorf("sysenter: attach to raw tracepoint sys_enter: %w", err)
	}
	return &c, nil
}

// Watch starts counting the calls made by the process tgid (the pid of its
// main thread), from zero.
func (c *Counter) Watch(tgid int) error {
	if err := c.objs.Counts.Put(uint32(tgid), uint64(0)); err != nil {
		return fmt.Errorf("sysenter: watch process %d: %w", tgid, err)
	}
	return nil
}

// Count returns how many calls process tgid has made since Watch.
func (c *Counter) Count(tgid int) (uint64, error) {
	var n uint64
	if err := c.objs.Counts.Lookup(uint32(tgid), &n); err != nil {
		return 0, fmt.Errorf("sysenter: count of process %d: %w", tgid, err)
	}
	return n, nil
}

// Close detaches the program, which then costs nothing, and unloads it.
func (c *Counter) Close() error {
	return errors.Join(c.link.Close(), c.objs.Close())
}
