package sec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

const (
	measureRole = "sec.measure"
	recordSize  = 24 // elapsed ns, r1, errno
)

func init() { filter.RegisterChild(measureRole, measure) }

type request struct {
	Program    []bpf.Instruction `json:"program"`
	Calls      []Call            `json:"calls"`
	Iterations int               `json:"iterations"`
	Warmup     int               `json:"warmup"`
}

// record is what a child measured for one call.
type record struct {
	elapsed time.Duration
	result  filter.Result
}

func measureInChild(ctx context.Context, opts Options, prog []bpf.Instruction, calls []Call) ([]record, error) {
	req := request{Program: prog, Calls: calls, Iterations: opts.CallsPerRun, Warmup: opts.CallsPerRun / 10}
	reply, err := opts.Child.Run(ctx, measureRole, req, len(calls)*recordSize)
	if err != nil {
		return nil, fmt.Errorf("sec: %w", err)
	}
	if len(reply) != len(calls)*recordSize {
		return nil, fmt.Errorf("sec: child replied %d bytes for %d calls", len(reply), len(calls))
	}
	recs := make([]record, len(calls))
	for i := range recs {
		b := reply[i*recordSize:]
		recs[i] = record{
			elapsed: time.Duration(binary.LittleEndian.Uint64(b)),
			result: filter.Result{
				R1:    uintptr(binary.LittleEndian.Uint64(b[8:])),
				Errno: syscall.Errno(binary.LittleEndian.Uint64(b[16:])),
			},
		}
	}
	return recs, nil
}

// measure is the child side. The calls are made on a thread of their own,
// which alone takes the filter; the main thread keeps the time.
//
// Only the measuring thread takes the filter, unlike what a Go program
// enforcing a policy must do: the runtime's other threads keep their system
// calls whatever the program denies, so none of them crashes or spins beside
// the measurement. A filter costs a call the same whichever threads share
// it. The measuring thread, for its part, runs nothing but raw system calls
// and atomic operations once filtered: reading the clock, like any function
// call, could let the scheduler preempt it, which takes futex(2), which the
// program may deny (see filter.ChildFunc).
func measure(req, reply []byte) (int, error) {
	var r request
	if err := json.Unmarshal(req, &r); err != nil {
		return 0, fmt.Errorf("decode request: %w", err)
	}
	if len(reply) < len(r.Calls)*recordSize {
		return 0, fmt.Errorf("reply area of %d bytes is too small for %d calls", len(reply), len(r.Calls))
	}
	// The two threads spin, each on a P of its own.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	b := &bench{request: r, results: make([]filter.Result, len(r.Calls))}
	go b.work()
	elapsed, err := b.time()
	if err != nil {
		return 0, err
	}
	for i, d := range elapsed {
		rec := reply[i*recordSize:]
		binary.LittleEndian.PutUint64(rec, uint64(d))
		binary.LittleEndian.PutUint64(rec[8:], uint64(b.results[i].R1))
		binary.LittleEndian.PutUint64(rec[16:], uint64(b.results[i].Errno))
	}
	return len(r.Calls) * recordSize, nil
}

// bench is shared by the measuring thread, which makes the calls, and the
// main thread, which times them.
type bench struct {
	request
	results []filter.Result
	err     error
	// released counts the calls the measuring thread may go on to.
	released int32
	// marks counts what the measuring thread has passed: 1 once filtered,
	// then one more at the start and at the end of each timed loop; -1
	// when installing failed.
	marks int32
	// Both are used through the functions of sync/atomic rather than as
	// atomic.Int32: the race detector turns the methods into function
	// calls the scheduler could preempt, and the functions into assembly.
}

const installFailed = -1

// work runs on the measuring thread. It never returns once the filter is
// installed: the process exits around it.
func (b *bench) work() {
	runtime.LockOSThread()
	runtime.Gosched() // a fresh time slice, see filter.ChildFunc
	if _, err := filter.Install(b.Program, 0); err != nil {
		b.err = err
		atomic.StoreInt32(&b.marks, installFailed)
		return
	}
	atomic.StoreInt32(&b.marks, 1)
	for i, c := range b.Calls {
		for atomic.LoadInt32(&b.released) <= int32(i) {
		}
		a := c.Args
		for range b.Warmup {
			unix.RawSyscall6(c.Nr, a[0], a[1], a[2], a[3], a[4], a[5])
		}
		var r1 uintptr
		var errno syscall.Errno
		atomic.AddInt32(&b.marks, 1)
		for range b.Iterations {
			r1, _, errno = unix.RawSyscall6(c.Nr, a[0], a[1], a[2], a[3], a[4], a[5])
		}
		atomic.AddInt32(&b.marks, 1)
		b.results[i] = filter.Result{R1: r1, Errno: errno}
	}
	for {
		unix.RawSyscall(unix.SYS_PAUSE, 0, 0, 0)
	}
}

// time releases the calls one by one and times each timed loop from the
// mark at its start to the mark at its end.
func (b *bench) time() ([]time.Duration, error) {
	if !b.await(1) {
		return nil, b.err
	}
	elapsed := make([]time.Duration, len(b.Calls))
	for i := range b.Calls {
		atomic.StoreInt32(&b.released, int32(i+1))
		b.await(int32(2 + 2*i))
		start := time.Now()
		b.await(int32(3 + 2*i))
		elapsed[i] = time.Since(start)
	}
	return elapsed, nil
}

// await spins until the measuring thread passes mark, and reports false if
// it failed instead. Yielding the CPU between looks leaves it to the
// measuring thread on a machine with a single one.
func (b *bench) await(mark int32) bool {
	for {
		switch m := atomic.LoadInt32(&b.marks); {
		case m == installFailed:
			return false
		case m >= mark:
			return true
		}
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
}
