package filter

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ChildEnv is the environment variable that tells a binary started by
// Child.Run which role to play.
const ChildEnv = "SYSCELL_FILTER_CHILD"

// ChildFunc does the work of a role in a child. req is the request given to
// Child.Run, as JSON. The function writes its reply into reply, memory shared
// with the parent and at least as long as Child.Run asked, and returns how
// many bytes it wrote. An error is reported to the parent the same way.
// Writing the reply takes no system call, so a role can report under a
// filter that denies write(2). MaybeRunChild then exits with a raw
// exit_group(2); when the filter denies that too, the parent kills the
// child once the reply is complete.
//
// The function runs first thing in the process, on the main goroutine locked
// to its thread, with the garbage collector off and asynchronous preemption
// disabled, so that the Go runtime makes no system call of its own behind
// the role's back. One remains: the scheduler asks a goroutine that has run
// for 10 ms to yield at its next function call, and a locked thread yields
// through futex(2). A role that installs a filter that may deny futex should
// call runtime.Gosched just before Install, which starts a fresh 10 ms, and
// after Install call nothing but raw system calls until it returns; or else
// install the filter on a thread of its own and keep that thread to raw
// system calls. Under the race detector, whose runtime takes its own locks
// through futex(2), denying futex can hang a child all the same.
type ChildFunc func(req, reply []byte) (int, error)

var roles = struct {
	sync.Mutex
	m map[string]ChildFunc
}{m: make(map[string]ChildFunc)}

// RegisterChild makes role playable by MaybeRunChild. Call it from an init
// function, so that every binary linking the package can play the role. It
// panics when role is already registered.
func RegisterChild(role string, fn ChildFunc) {
	roles.Lock()
	defer roles.Unlock()
	if _, dup := roles.m[role]; dup {
		panic(fmt.Sprintf("filter: child role %q registered twice", role))
	}
	roles.m[role] = fn
}

func lookupRole(role string) ChildFunc {
	roles.Lock()
	defer roles.Unlock()
	return roles.m[role]
}

// MaybeRunChild returns at once unless ChildEnv is set, that is unless
// Child.Run started this process. Then it plays the role ChildEnv names,
// reports to the parent and exits, never returning. Call it first thing in
// main, or in TestMain: whatever runs before it runs in every child too.
func MaybeRunChild() {
	role, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return
	}
	code := runChild(role)
	// A raw exit_group, not os.Exit: no function call the scheduler could
	// preempt (see ChildFunc), and no exit hooks running under the filter.
	unix.RawSyscall(unix.SYS_EXIT_GROUP, uintptr(code), 0, 0)
	// Reached when the role's filter denies exit_group. The parent kills
	// this process once it sees the finished reply; until then, idle.
	for {
		unix.RawSyscall(unix.SYS_PAUSE, 0, 0, 0)
	}
}

// runChild plays role and returns the exit status.
func runChild(role string) int {
	fn := lookupRole(role)
	if fn == nil {
		fmt.Fprintf(os.Stderr, "filter: this binary has no child role %q\n", role)
		return 2
	}
	area, err := mapReply()
	if err != nil {
		fmt.Fprintf(os.Stderr, "filter: child %q: %v\n", role, err)
		return 2
	}
	req, err := io.ReadAll(os.Stdin)
	if err != nil {
		area.fail(fmt.Errorf("read request: %w", err))
		return 1
	}
	runtime.LockOSThread()
	debug.SetGCPercent(-1)
	n, err := fn(req, area.body())
	if err != nil {
		area.fail(err)
		return 1
	}
	area.finish(stateDone, n)
	return 0
}

// The reply area is a memfd the child maps: a header of two little-endian
// 32-bit words, the state then the length of the body, and the body.
const (
	replyFD      = 3 // the first of exec.Cmd.ExtraFiles
	headerSize   = 8
	minBody      = 4096 // room for an error message
	stateRunning = 0
	stateDone    = 1
	stateFailed  = 2
	pollInterval = 5 * time.Millisecond
	stderrLimit  = 4096
)

type replyArea []byte

func mapReply() (replyArea, error) {
	var st unix.Stat_t
	if err := unix.Fstat(replyFD, &st); err != nil {
		return nil, fmt.Errorf("reply area (fd %d): %w", replyFD, err)
	}
	mem, err := unix.Mmap(replyFD, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map reply area: %w", err)
	}
	if len(mem) < headerSize {
		return nil, fmt.Errorf("reply area of %d bytes has no room for its header", len(mem))
	}
	return replyArea(mem), nil
}

func (a replyArea) body() []byte { return a[headerSize:] }

// finish publishes the reply. The state is stored last, atomically, so the
// parent never sees a final state with a stale length.
func (a replyArea) finish(state uint32, n int) {
	binary.LittleEndian.PutUint32(a[4:], uint32(n))
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&a[0])), state)
}

func (a replyArea) fail(err error) {
	a.finish(stateFailed, copy(a.body(), err.Error()))
}

// Child starts copies of a binary that play a registered role. The zero
// Child re-executes the running binary with the caller's credentials.
type Child struct {
	// Path is the binary to start, os.Executable() when empty. It must call
	// MaybeRunChild first thing in main, or in TestMain.
	Path string
	// SysProcAttr is given to the child, for example a Credential to run
	// it unprivileged.
	SysProcAttr *syscall.SysProcAttr
}

// Run starts a child playing role, passes it req encoded as JSON, and
// returns its reply once the reply is complete, killing the child if it has
// not exited by then. replySize is the room the role needs for its reply.
func (c Child) Run(ctx context.Context, role string, req any, replySize int) ([]byte, error) {
	if replySize < 0 {
		return nil, fmt.Errorf("filter: child %q: negative reply size %d", role, replySize)
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("filter: child %q: encode request: %w", role, err)
	}
	size := headerSize + max(replySize, minBody)
	reply, err := newReplyFile(size)
	if err != nil {
		return nil, fmt.Errorf("filter: child %q: %w", role, err)
	}
	defer reply.Close()
	var stderr bytes.Buffer
	cmd, err := c.command(role, payload, reply, &stderr)
	if err != nil {
		return nil, fmt.Errorf("filter: child %q: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("filter: start child %q: %w", role, err)
	}
	exitErr := await(ctx, cmd, reply)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("filter: child %q: %w", role, ctx.Err())
	}
	body, err := readReply(reply, size-headerSize)
	if err != nil {
		return nil, fmt.Errorf("filter: child %q (%v): %w%s", role, exitErr, err, stderrNote(stderr.String()))
	}
	return body, nil
}

func (c Child) command(role string, payload []byte, reply *os.File, stderr io.Writer) (*exec.Cmd, error) {
	path := c.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own binary: %w", err)
		}
		path = exe
	}
	cmd := exec.Command(path)
	cmd.Env = childEnv(os.Environ(), role)
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{reply}
	cmd.SysProcAttr = c.SysProcAttr
	return cmd, nil
}

// childEnv names the role and turns asynchronous preemption off: it
// interrupts a long-running goroutine with a signal whose handler returns
// through rt_sigreturn(2), so that under a filter denying rt_sigreturn the
// first preemption would crash the child.
func childEnv(env []string, role string) []string {
	out := []string{ChildEnv + "=" + role}
	godebug := "asyncpreemptoff=1"
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, ChildEnv+"="):
		case strings.HasPrefix(kv, "GODEBUG="):
			godebug = strings.TrimPrefix(kv, "GODEBUG=") + "," + godebug
		default:
			out = append(out, kv)
		}
	}
	return append(out, "GODEBUG="+godebug)
}

func newReplyFile(size int) (*os.File, error) {
	fd, err := unix.MemfdCreate("syscell-filter-reply", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create reply area: %w", err)
	}
	f := os.NewFile(uintptr(fd), "syscell-filter-reply")
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("size reply area: %w", err)
	}
	return f, nil
}

// await returns once the child has exited, or has finished its reply and
// been killed: a child whose filter denies exit_group(2) cannot exit. It
// returns the child's exit error, for the record.
func await(ctx context.Context, cmd *exec.Cmd, reply *os.File) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return err
		case <-tick.C:
			if state, _, err := readHeader(reply); err == nil && state != stateRunning {
				cmd.Process.Kill()
				return <-exited
			}
		case <-ctx.Done():
			cmd.Process.Kill()
			return <-exited
		}
	}
}

func readHeader(reply *os.File) (state, n uint32, err error) {
	var hdr [headerSize]byte
	if _, err := reply.ReadAt(hdr[:], 0); err != nil {
		return 0, 0, fmt.Errorf("read reply header: %w", err)
	}
	return binary.LittleEndian.Uint32(hdr[:4]), binary.LittleEndian.Uint32(hdr[4:]), nil
}

func readReply(reply *os.File, room int) ([]byte, error) {
	state, n, err := readHeader(reply)
	if err != nil {
		return nil, err
	}
	if state == stateRunning {
		return nil, errors.New("exited before finishing its reply")
	}
	if int64(n) > int64(room) {
		return nil, fmt.Errorf("reply of %d bytes overflows its area of %d", n, room)
	}
	body := make([]byte, n)
	if _, err := reply.ReadAt(body, headerSize); err != nil {
		return nil, fmt.Errorf("read reply: %w", err)
	}
	if state == stateFailed {
		return nil, errors.New(string(body))
	}
	return body, nil
}

// stderrNote quotes the start of what a failed child printed, where a panic
// or the runtime's complaint names the cause.
func stderrNote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > stderrLimit {
		s = s[:stderrLimit] + "…"
	}
	return "; stderr:\n" + s
}
