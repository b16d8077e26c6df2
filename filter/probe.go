package filter

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
)

// Syscall is a system call for a child to make under a filter. The child
// makes it for real: choose calls that are harmless whatever their
// arguments, and dangerous ones only with arguments the kernel rejects.
type Syscall struct {
	Nr   uintptr    `json:"nr"`
	Args [6]uintptr `json:"args"`
	// Strings replaces arguments by the address of a NUL-terminated copy
	// of a string in the child, for calls that take a path.
	Strings map[int]string `json:"strings,omitempty"`
}

// Result is what a system call returned in a child.
type Result struct {
	// R1 is the return value as RawSyscall6 gives it: all ones on failure.
	R1    uintptr       `json:"r1"`
	Errno syscall.Errno `json:"errno"`
}

const (
	probeRole  = "filter.probe"
	resultSize = 16
)

type probeRequest struct {
	Program []bpf.Instruction `json:"program"`
	Calls   []Syscall         `json:"calls"`
}

func init() { RegisterChild(probeRole, probe) }

// Probe starts a child that installs prog, makes calls in order and reports
// what each returned. Apply DistinctErrnos to prog first unless it only
// allows and returns errnos: a kill takes the child down before it reports.
//
// The child installs prog on the thread that makes the calls, without
// FlagTSync: the verdicts are the same, and the Go runtime's other threads
// keep their system calls whatever prog denies. Between Install and its
// exit the thread makes raw system calls only, so any program can be
// probed, one that denies futex(2) or exit_group(2) included (but for the
// race detector's sake, see ChildFunc).
func (c Child) Probe(ctx context.Context, prog []bpf.Instruction, calls []Syscall) ([]Result, error) {
	reply, err := c.Run(ctx, probeRole, probeRequest{Program: prog, Calls: calls}, len(calls)*resultSize)
	if err != nil {
		return nil, err
	}
	if len(reply) != len(calls)*resultSize {
		return nil, fmt.Errorf("filter: probe reply holds %d bytes for %d calls", len(reply), len(calls))
	}
	results := make([]Result, len(calls))
	for i := range results {
		rec := reply[i*resultSize:]
		results[i] = Result{
			R1:    uintptr(binary.LittleEndian.Uint64(rec)),
			Errno: syscall.Errno(binary.LittleEndian.Uint64(rec[8:])),
		}
	}
	return results, nil
}

// probe is the child side of Probe.
func probe(req, reply []byte) (int, error) {
	var r probeRequest
	if err := json.Unmarshal(req, &r); err != nil {
		return 0, fmt.Errorf("decode probe request: %w", err)
	}
	if len(reply) < len(r.Calls)*resultSize {
		return 0, fmt.Errorf("reply area of %d bytes is too small for %d calls", len(reply), len(r.Calls))
	}
	args, strs, err := resolveStrings(r.Calls)
	if err != nil {
		return 0, err
	}
	// A fresh time slice, so that the scheduler never needs to preempt
	// this thread once it is filtered (see ChildFunc).
	runtime.Gosched()
	if _, err := Install(r.Program, 0); err != nil {
		return 0, err
	}
	for i, c := range r.Calls {
		a := args[i]
		r1, _, errno := unix.RawSyscall6(c.Nr, a[0], a[1], a[2], a[3], a[4], a[5])
		binary.LittleEndian.PutUint64(reply[i*resultSize:], uint64(r1))
		binary.LittleEndian.PutUint64(reply[i*resultSize+8:], uint64(errno))
	}
	runtime.KeepAlive(strs)
	return len(r.Calls) * resultSize, nil
}

// resolveStrings returns the arguments of every call with its Strings
// placed in memory, and that memory, which must stay alive until the calls
// are made. Go's collector does not move objects, so an address taken here
// stays valid.
func resolveStrings(calls []Syscall) ([][6]uintptr, [][]byte, error) {
	args := make([][6]uintptr, len(calls))
	var strs [][]byte
	for i, c := range calls {
		args[i] = c.Args
		for arg, s := range c.Strings {
			if arg < 0 || arg >= len(c.Args) {
				return nil, nil, fmt.Errorf("call %d: string for argument %d, which does not exist", i, arg)
			}
			b := append([]byte(s), 0)
			strs = append(strs, b)
			args[i][arg] = uintptr(unsafe.Pointer(&b[0]))
		}
	}
	return args, strs, nil
}
