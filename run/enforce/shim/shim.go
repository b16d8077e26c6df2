// Package shim is the process syscell run starts a command through under
// a whole-process policy (package enforce, which starts it): it installs
// the compiled filter on the thread that then executes the command. Its
// own binary is a C program (src/shim.c), which starts in a fraction of
// the time a Go binary takes; this is the same shim for a binary that
// calls MaybeRun first thing in main, syscell's own among them, where
// there is none.
package shim

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// Env is the environment variable that makes a binary started by
// enforce.Run play the shim.
const Env = "SYSCELL_RUN_SHIM"

// What the shim writes to the supervisor: Ready just before it installs
// the filter; Listener with the listener; Fail, then why it failed, up to
// the end. The end of the stream after Ready without Fail means that
// execve closed the shim's end: the command runs.
const (
	Ready    = 'R'
	Listener = 'L'
	Fail     = 'E'
)

const (
	// FD is the shim's end of its socket to the supervisor, the first of
	// exec.Cmd.ExtraFiles.
	FD = 3
	// Failed is the shim's exit status when the command could not be
	// started.
	Failed = 127
	// handoffPoll is how often the shim's unfiltered thread looks at what
	// the filtered one published.
	handoffPoll = 20 * time.Microsecond
)

func init() {
	// Locked during initialization, the main goroutine runs main on the
	// main thread, whose id is the process's: the supervisor checks that
	// the first execve it is asked about comes from there.
	if _, ok := os.LookupEnv(Env); ok {
		runtime.LockOSThread()
	}
}

// MaybeRun returns at once unless Env is set, that is unless enforce.Run
// started this process. Then it installs the filter and executes the
// command, or reports to the supervisor why it could not, and never
// returns. Call it first thing in main (in TestMain for a test binary):
// whatever runs before it runs in every shim too.
func MaybeRun() {
	if _, ok := os.LookupEnv(Env); !ok {
		return
	}
	err := run(os.NewFile(FD, "syscell-run-shim"))
	report(err)
	os.Exit(Failed)
}

// run does the work of the shim and returns only when it failed before
// installing the filter.
func run(sock *os.File) error {
	debug.SetGCPercent(-1)
	b, err := io.ReadAll(sock)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	req, err := DecodeRequest(b)
	if err != nil {
		return err
	}
	prog, err := bpf.Decode(req.Program)
	if err != nil {
		return err
	}
	if err := closeOnExec(); err != nil {
		return err
	}
	path, err := syscall.BytePtrFromString(req.Path)
	if err != nil {
		return fmt.Errorf("path %q: %w", req.Path, err)
	}
	argv, err := syscall.SlicePtrFromStrings(req.Args)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	envp, err := syscall.SlicePtrFromStrings(req.Env)
	if err != nil {
		return fmt.Errorf("environment: %w", err)
	}
	flags := filter.Flags(0)
	if req.Listen {
		flags = filter.FlagNewListener
	}
	// The filtered thread never gives up its P, so the voice needs another.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	h := &handoff{path: req.Path}
	h.listener.Store(-1)
	go h.speak(req.Listen)
	if _, err := unix.Write(FD, []byte{Ready}); err != nil {
		return fmt.Errorf("write to the supervisor: %w", err)
	}
	// A fresh time slice, so that the scheduler never needs this thread
	// once it is filtered (see filter.ChildFunc).
	runtime.Gosched()
	listener, err := filter.Install(prog, flags)
	if err != nil {
		return err
	}
	h.listener.Store(int32(listener))
	_, _, errno := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(path)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envp[0])))
	h.execErrno.Store(int32(errno))
	// The voice reports and ends the process; this thread may make no
	// further system call, which the policy could deny.
	for {
	}
}

// closeOnExec marks every descriptor but the standard streams
// close-on-exec: the socket, which os/exec hands over without the flag,
// and whatever the supervisor inherited without it from its own parent.
func closeOnExec() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("list open descriptors: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

// handoff is what the filtered thread publishes, without a system call,
// for the shim's voice: a goroutine on an unfiltered thread that speaks to
// the supervisor for it.
type handoff struct {
	path      string
	listener  atomic.Int32 // -1 until installed
	execErrno atomic.Int32 // 0 until execve fails
}

// speak sends the listener once there is one, then waits for execve to
// fail, reports why, and ends the process. If execve succeeds, the kernel
// ends this thread first.
func (h *handoff) speak(listen bool) {
	if listen {
		for h.listener.Load() < 0 {
			pause()
		}
		rights := unix.UnixRights(int(h.listener.Load()))
		if err := unix.Sendmsg(FD, []byte{Listener}, rights, nil, 0); err != nil {
			h.fail(fmt.Errorf("send the listener: %w", err))
		}
	}
	for h.execErrno.Load() == 0 {
		pause()
	}
	h.fail(fmt.Errorf("execute %s: %w", h.path, syscall.Errno(h.execErrno.Load())))
}

// pause sleeps for handoffPoll in nanosleep(2) rather than on a Go timer,
// which could sit in the timers of the P that the filtered thread never
// gives up.
func pause() {
	ts := unix.NsecToTimespec(int64(handoffPoll))
	unix.Nanosleep(&ts, nil)
}

// fail reports err and ends the process from this unfiltered thread.
func (h *handoff) fail(err error) {
	report(err)
	unix.Exit(Failed)
}

// report tells the supervisor why the command was not started.
func report(err error) {
	unix.Write(FD, append([]byte{Fail}, err.Error()...))
}
