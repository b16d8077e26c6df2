//go:build linux && amd64

package bpf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel is the reference for Validate and Run. These tests install
// filters for real: each in a child process (this test binary run again),
// on one locked thread, which then makes system calls and records what the
// filter made of them. Nothing else in the child is filtered.

// childEnv marks the test binary as a child that installs a filter.
const childEnv = "SYSCELL_BPF_KERNEL_CHILD"

// auditArchX86_64 is seccomp_data.arch for the calls the child makes.
const auditArchX86_64 = 0xc000003e

// firstFreeNr is above every x86-64 system call number, so that a call the
// filter allows fails with ENOSYS and does nothing.
const firstFreeNr = 1000

// probe is a filter and the system calls to make under it.
type probe struct {
	prog  []Instruction
	calls []call
}

// call is a system call number and its arguments.
type call struct {
	nr   uint32
	args [6]uint64
}

// observed is what the child saw.
type observed struct {
	installErr syscall.Errno
	// returns holds what each call returned, until the thread died.
	returns []uint64
	// threadDied is set when the filter killed the calling thread, and
	// signal when it killed the process.
	threadDied bool
	signal     syscall.Signal
}

// request is the text a child reads: the filter, then one call a line.
func (p probe) request() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%x\n", Encode(p.prog))
	for _, c := range p.calls {
		fmt.Fprintf(&b, "%d", c.nr)
		for _, a := range c.args {
			fmt.Fprintf(&b, " %d", a)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// observe runs p in a child.
func observe(t *testing.T, p probe) observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKernelChild$", "-test.count=1")
	// No goroutine of the child may be preempted by a signal or stopped
	// for garbage collection: the filtered thread can neither return
	// from a signal handler nor stop, as both take system calls.
	cmd.Env = append(os.Environ(), childEnv+"=1", "GODEBUG=asyncpreemptoff=1", "GOGC=off")
	cmd.Stdin = strings.NewReader(p.request())
	out, err := cmd.Output()
	var obs observed
	var exit *exec.ExitError
	if ctx.Err() != nil {
		t.Fatalf("child hung on\n%s", Disassemble(p.prog))
	}
	if errors.As(err, &exit) {
		status := exit.Sys().(syscall.WaitStatus)
		if !status.Signaled() {
			t.Fatalf("child failed: %v\n%s%s", err, out, exit.Stderr)
		}
		obs.signal = status.Signal()
	} else if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		var a uint64
		switch {
		case strings.HasPrefix(line, "install "):
			fmt.Sscanf(line, "install %d", &a)
			obs.installErr = syscall.Errno(a)
		case strings.HasPrefix(line, "call "):
			fmt.Sscanf(line, "call %d", &a)
			obs.returns = append(obs.returns, a)
		case line == "died":
			obs.threadDied = true
		case line == "timeout":
			t.Fatalf("child timed out:\n%s", out)
		}
	}
	return obs
}

// TestKernelChild is the child's side: it reads a probe from standard
// input, and writes what happened.
func TestKernelChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as the child of the kernel tests")
	}
	filter, calls := readRequest(t)
	var (
		installed, done, printed atomic.Int32
		installErr               atomic.Uintptr
		tid                      atomic.Int32
		returns                  = make([]uintptr, len(calls))
	)
	// A filter that kills the process must not leave a core file behind.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The thread stays locked, and so filtered, until the process
		// exits.
		runtime.LockOSThread()
		tid.Store(int32(unix.Gettid()))
		_, _, errno := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0)
		if errno == 0 {
			fprog := unix.SockFprog{Len: uint16(len(filter))}
			if len(filter) > 0 {
				fprog.Filter = &filter[0]
			}
			_, _, errno = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
		}
		installErr.Store(uintptr(errno))
		installed.Store(1)
		if errno != 0 {
			return
		}
		for i, c := range calls {
			// Wait until the results so far are out, in case this call
			// kills the process.
			for printed.Load() < int32(i) {
			}
			r1, _, errno := unix.RawSyscall6(uintptr(c.nr), uintptr(c.args[0]), uintptr(c.args[1]), uintptr(c.args[2]), uintptr(c.args[3]), uintptr(c.args[4]), uintptr(c.args[5]))
			if errno != 0 {
				// RawSyscall splits what the kernel returned, -errno,
				// into -1 and errno, except for -4095.
				r1 = -uintptr(errno)
			}
			returns[i] = r1
			done.Store(int32(i + 1))
		}
		// Every system call from here on would meet the filter, so spin
		// until the process exits.
		for {
		}
	}()
	for !installed.CompareAndSwap(1, 2) {
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("install %d\n", installErr.Load())
	if installErr.Load() != 0 {
		os.Exit(0)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n := done.Load()
		for i := printed.Load(); i < n; i++ {
			fmt.Printf("call %d\n", returns[i])
		}
		printed.Store(n)
		if int(n) == len(calls) {
			os.Exit(0)
		}
		if threadGone(int(tid.Load())) {
			fmt.Println("died")
			os.Exit(0)
		}
	}
	fmt.Println("timeout")
	os.Exit(0)
}

// readRequest parses what probe.request writes.
func readRequest(t *testing.T) ([]unix.SockFilter, []call) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("no request")
	}
	var raw []byte
	if _, err := fmt.Sscanf(sc.Text(), "%x", &raw); err != nil && sc.Text() != "" {
		t.Fatal(err)
	}
	prog, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, ins := range prog {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	var calls []call
	for sc.Scan() {
		var c call
		fmt.Sscanf(sc.Text(), "%d %d %d %d %d %d %d", &c.nr, &c.args[0], &c.args[1], &c.args[2], &c.args[3], &c.args[4], &c.args[5])
		calls = append(calls, c)
	}
	return filter, calls
}

// threadGone reports whether thread tid of this process has exited.
func threadGone(tid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses.
	s := string(stat)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	state := strings.TrimSpace(rest)
	return state == "" || state[0] == 'Z' || state[0] == 'X'
}

// raceDetector reports whether this binary was built with -race.
func raceDetector() bool {
	info, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool {
		return s.Key == "-race" && s.Value == "true"
	})
}

// needKernel skips the test where this process cannot install filters.
func needKernel(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts hundreds of processes")
	}
	if raceDetector() {
		t.Skip("the race detector makes system calls of its own on the filtered thread")
	}
	if obs := observe(t, probe{prog: []Instruction{Ret(retAllow)}}); obs.installErr != 0 {
		t.Skipf("cannot install seccomp filters here: %v", obs.installErr)
	}
}

// TestKernelValidate checks that Validate refuses exactly what the kernel
// refuses: the test vectors, random valid programs, and random programs
// with one field changed, most of which the kernel refuses.
func TestKernelValidate(t *testing.T) {
	needKernel(t)
	var progs [][]Instruction
	for _, s := range readArchive(t, "testdata/validate.txtar") {
		progs = append(progs, mustAssemble(t, s.text))
	}
	progs = append(progs, make([]Instruction, MaxInstructions+1))
	for i := range progs[len(progs)-1] {
		progs[len(progs)-1][i] = Ret(retAllow)
	}
	c := seeded(11)
	for i := range 240 {
		prog, _ := randomProgram(c, 1+c.IntN(40))
		if i%3 != 0 {
			mutate(c, prog)
		}
		progs = append(progs, prog)
	}
	accepted := 0
	for _, prog := range progs {
		obs := observe(t, probe{prog: prog})
		if obs.installErr != 0 && obs.installErr != syscall.EINVAL {
			t.Fatalf("install: %v\n%s", obs.installErr, Disassemble(prog))
		}
		err := Validate(prog)
		if (obs.installErr == 0) != (err == nil) {
			t.Errorf("kernel says %v, Validate says %v, for\n%s", obs.installErr, err, Disassemble(prog))
		}
		if err == nil {
			accepted++
		}
	}
	t.Logf("%d programs, %d accepted", len(progs), accepted)
}

// mutate changes one field of one instruction of prog.
func mutate(c chooser, prog []Instruction) {
	ins := &prog[c.IntN(len(prog))]
	switch c.IntN(4) {
	case 0:
		ops := slices.Sorted(maps.Keys(operands))
		ins.Op = ops[c.IntN(len(ops))]
	case 1:
		ins.Jt = uint8(c.IntN(8))
	case 2:
		ins.Jf = uint8(c.IntN(8))
	default:
		ins.K = []uint32{0, 1, 2, 4, 15, 16, 31, 32, 60, 64, c.Uint32()}[c.IntN(11)]
	}
}

// TestKernelVectors runs the vectors of testdata/run.txtar in the kernel,
// those it can: valid programs, on calls of this architecture the child can
// make, and whose outcome it can see.
func TestKernelVectors(t *testing.T) {
	needKernel(t)
	checked := 0
	for _, v := range readVectors(t) {
		cl := call{nr: v.in.Nr, args: v.in.Args}
		if Validate(v.prog) != nil || v.in.Arch != auditArchX86_64 || v.in.Nr < firstFreeNr || v.want.ReadsIP || len(callsToMake(t, v.prog, []call{cl})) == 0 {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			p := probe{prog: v.prog, calls: []call{cl}}
			checkKernelRun(t, p, observe(t, p))
		})
		checked++
	}
	t.Logf("%d vectors checked", checked)
}

// TestKernelRun checks that Run returns what the kernel's filter returns,
// for random programs and their optimized forms: each call's result must
// be what the action Run predicts makes of it.
func TestKernelRun(t *testing.T) {
	needKernel(t)
	c := seeded(13)
	nrs := []uint32{firstFreeNr, firstFreeNr + 1, firstFreeNr + 7, firstFreeNr + 64}
	s := shape{
		consts:  append([]uint32{0, 1, 2, 3, 31, 32, 33, 0xffffffff, auditArchX86_64, 0x40000003}, nrs...),
		returns: []uint32{retAllow, retLog, retErrno, retErrno | 1, retErrno | 13, retErrno | 4095, retErrno | 5000, retKillThread, retKillProcess},
		// The instruction pointer of the call is not known in advance.
		words: []uint32{OffsetNr, OffsetNr, OffsetArch, ArgLow(0), ArgHigh(0), ArgLow(1), ArgLow(2), ArgHigh(5)},
	}
	calls := 0
	for range 100 {
		prog := generate(c, 1+c.IntN(50), s)
		if prog == nil {
			continue
		}
		p := probe{prog: prog}
		for range 12 {
			in := randomInput(c, s.consts)
			in.Nr, in.Arch = nrs[c.IntN(len(nrs))], auditArchX86_64
			p.calls = append(p.calls, call{nr: in.Nr, args: in.Args})
		}
		p.calls = callsToMake(t, prog, p.calls)
		for _, q := range []probe{p, {prog: Optimize(prog), calls: p.calls}} {
			checkKernelRun(t, q, observe(t, q))
			calls += len(q.calls)
		}
	}
	t.Logf("%d calls checked", calls)
}

// callsToMake keeps the calls whose outcome the child can observe, with at
// most one that kills, last.
func callsToMake(t *testing.T, prog []Instruction, calls []call) []call {
	var keep []call
	var kill *call
	for i, cl := range calls {
		switch ret := predict(t, prog, cl) & retActionMask; ret {
		case retAllow, retLog, retErrno:
			keep = append(keep, cl)
		case retTrap, retTrace, retUserNotif:
			// A signal or a tracer the child cannot handle.
		default:
			kill = &calls[i]
		}
	}
	if kill != nil {
		keep = append(keep, *kill)
	}
	return keep
}

// predict runs prog on what the kernel hands the filter for cl.
func predict(t *testing.T, prog []Instruction, cl call) uint32 {
	t.Helper()
	res, err := Run(prog, &SeccompData{Nr: cl.nr, Arch: auditArchX86_64, Args: cl.args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Ret
}

// checkKernelRun compares what the child saw with what Run predicts: an
// errno for SECCOMP_RET_ERRNO, at most MAX_ERRNO; ENOSYS for the calls that
// run; a dead thread or process for the kills and unknown actions.
func checkKernelRun(t *testing.T, p probe, obs observed) {
	t.Helper()
	if obs.installErr != 0 {
		t.Fatalf("install: %v\n%s", obs.installErr, Disassemble(p.prog))
	}
	for i, cl := range p.calls {
		ret := predict(t, p.prog, cl)
		fail := func(saw string) {
			t.Errorf("call %d (nr %d, args %#x): Run returns %s, the kernel %s, for\n%s", i, cl.nr, cl.args, formatRet(ret), saw, Disassemble(p.prog))
		}
		if i >= len(obs.returns) {
			switch action := ret & retActionMask; {
			case action == retAllow || action == retLog || action == retErrno:
				fail(fmt.Sprintf("killed the thread (%v) or the process (signal %v)", obs.threadDied, obs.signal))
			case action == retKillThread && !obs.threadDied:
				fail("did not kill the thread")
			case action != retKillThread && obs.signal != syscall.SIGSYS:
				fail(fmt.Sprintf("did not kill the process with SIGSYS (signal %v)", obs.signal))
			}
			return
		}
		r1 := int64(obs.returns[i])
		switch ret & retActionMask {
		case retErrno:
			if want := int64(min(ret&retDataMask, 4095)); r1 != -want {
				fail(fmt.Sprintf("returned %d", r1))
			}
		case retAllow, retLog:
			if r1 != -int64(syscall.ENOSYS) {
				fail(fmt.Sprintf("returned %d", r1))
			}
		default:
			fail(fmt.Sprintf("returned %d", r1))
		}
	}
}
