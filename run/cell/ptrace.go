package cell

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/unwind"
)

// errRetry reports a call the supervisor let the kernel make again, to be
// notified anew: it stopped the thread to read its registers, which
// withdrew the notification.
var errRetry = errors.New("the call is made again")

// saved are the callee-saved registers of a thread, for the call it makes
// again after being stopped at sp and pc.
type saved struct {
	sp, pc uint64
	regs   unix.PtraceRegs
}

// tracer makes the ptrace calls, all from one thread, as ptrace demands
// of a tracer; the supervisor's own goroutine stays free to move between
// threads, which a locked one pays for at every wait.
type tracer struct {
	reqs chan traceRequest
	// started starts the thread at the first request (an unwind that
	// needs more registers than a notification carries, an exec's
	// environment to repair): most runs make none, and a thread locked
	// at the supervisor's start made the program wait for the thread's
	// creation before its first call was answered.
	started sync.Once
}

type traceRequest struct {
	run   func() error
	reply chan<- error
}

func newTracer() *tracer {
	return &tracer{reqs: make(chan traceRequest)}
}

// serve runs requests until stop. Its thread, locked, ends with it.
func (t *tracer) serve() {
	runtime.LockOSThread()
	for r := range t.reqs {
		r.reply <- r.run()
	}
}

func (t *tracer) stop() { close(t.reqs) }

// do runs f on the tracer's thread.
func (t *tracer) do(f func() error) error {
	t.started.Do(func() { go t.serve() })
	reply := make(chan error)
	t.reqs <- traceRequest{f, reply}
	return <-reply
}

// registers reads the registers of thread tid (readRegisters).
func (t *tracer) registers(tid int) (unix.PtraceRegs, error) {
	var regs unix.PtraceRegs
	err := t.do(func() (err error) {
		regs, err = readRegisters(tid)
		return err
	})
	return regs, err
}

// readRegisters stops thread tid, which waits in a notified call, with
// ptrace, and reads its registers. Stopping it interrupts the wait: the
// kernel withdraws the notification and, once the thread is let go, makes
// the call again (its result was -ERESTARTSYS and no handler ran), so the
// supervisor gets it anew with these registers still in place.
func readRegisters(tid int) (unix.PtraceRegs, error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceSeize(tid); err != nil {
		return regs, fmt.Errorf("cell: ptrace thread %d: %w", tid, err)
	}
	defer unix.PtraceDetach(tid)
	return interrupt(tid)
}

// interrupt stops thread tid, seized, and reads its registers.
func interrupt(tid int) (unix.PtraceRegs, error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceInterrupt(tid); err != nil {
		return regs, fmt.Errorf("cell: interrupt thread %d: %w", tid, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
		return regs, fmt.Errorf("cell: wait for thread %d: %w", tid, err)
	}
	if !ws.Stopped() {
		return regs, fmt.Errorf("cell: thread %d did not stop: status %#x", tid, uint32(ws))
	}
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return regs, fmt.Errorf("cell: registers of thread %d: %w", tid, err)
	}
	return regs, nil
}

// calleeSaved are the registers readRegisters adds to a notification's:
// the ones the ABI preserves across calls, which CFI may find a frame's
// CFA or return address in. rcx and r11 stay unknown: the syscall
// instruction overwrites them.
var calleeSaved = []unwind.Reg{unwind.RBX, unwind.RBP, unwind.R12, unwind.R13, unwind.R14, unwind.R15}

// fill adds the callee-saved registers to regs.
func (s *saved) fill(regs *unwind.Regs) {
	r := &s.regs
	for reg, v := range map[unwind.Reg]uint64{
		unwind.RBX: r.Rbx, unwind.RBP: r.Rbp, unwind.R12: r.R12,
		unwind.R13: r.R13, unwind.R14: r.R14, unwind.R15: r.R15,
	} {
		regs[reg] = v
	}
}

// setExecEnv stops thread tid, which waits in a notified exec, and has it
// make the exec again with env as its environment: the strings and their
// array are written below its stack's red zone (memory the exec replaces
// if it succeeds, and the thread's stack no longer holds anything in if
// it fails), and the argument register arg points to them.
func setExecEnv(tid, arg int, env []string) error {
	if err := unix.PtraceSeize(tid); err != nil {
		return fmt.Errorf("cell: ptrace thread %d: %w", tid, err)
	}
	defer unix.PtraceDetach(tid)
	regs, err := interrupt(tid)
	if err != nil {
		return err
	}
	block, envp := envBlock(regs.Rsp-redZone, env)
	remote := []unix.RemoteIovec{{Base: uintptr(envp), Len: len(block)}}
	if _, err := unix.ProcessVMWritev(tid, []unix.Iovec{{Base: &block[0], Len: uint64(len(block))}}, remote, 0); err != nil {
		return fmt.Errorf("cell: write the environment of thread %d: %w", tid, err)
	}
	switch arg {
	case 2:
		regs.Rdx = envp
	case 3:
		regs.R10 = envp
	}
	if err := unix.PtraceSetRegs(tid, &regs); err != nil {
		return fmt.Errorf("cell: registers of thread %d: %w", tid, err)
	}
	return nil
}

// redZone is what the x86_64 ABI lets a function use below its stack
// pointer.
const redZone = 128

// envBlock lays out env below top: the array of pointers (at the returned
// address, 16-byte aligned), then the strings.
func envBlock(top uint64, env []string) ([]byte, uint64) {
	size := 8 * (len(env) + 1)
	for _, kv := range env {
		size += len(kv) + 1
	}
	base := (top - uint64(size)) &^ 15
	block := make([]byte, size)
	str := 8 * (len(env) + 1)
	for i, kv := range env {
		binary.LittleEndian.PutUint64(block[8*i:], base+uint64(str))
		str += copy(block[str:], kv) + 1
	}
	return block, base
}
