package mech

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// process is a running payload, seen from the parent.
type process struct {
	ctx   context.Context
	pid   int
	pidfd int
	conn  *net.UnixConn
	// exited receives how the payload ended, once it is reaped; ended
	// holds it once received.
	exited chan ended
	ended  *ended
	// unwatch stops killing the payload when the context ends.
	unwatch func()
}

// ended is how a payload ended.
type ended struct {
	status unix.WaitStatus
	// intercepted counts the getpid calls its tracer saw.
	intercepted uint64
	err         error
}

// start starts a payload for req, traced by t unless t is nil. Cancelling
// ctx kills it.
func start(ctx context.Context, req request, t *tracer) (*process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	env, err := payloadEnviron(os.Environ(), req)
	if err != nil {
		return nil, err
	}
	conn, theirs, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	p := &process{ctx: ctx, pidfd: -1, conn: conn, exited: make(chan ended, 1)}
	started := make(chan error)
	go p.launch(exe, env, theirs, t, started)
	if err := <-started; err != nil {
		conn.Close()
		return nil, err
	}
	p.unwatch = p.watch(ctx)
	return p, nil
}

// payloadEnviron is env with the request, and with asynchronous preemption
// off: it interrupts a long loop with a signal, which under ptrace is one
// more stop.
func payloadEnviron(env []string, req request) ([]string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	out := []string{PayloadEnv + "=" + string(b)}
	godebug := "asyncpreemptoff=1"
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, PayloadEnv+"="):
		case strings.HasPrefix(kv, "GODEBUG="):
			godebug = strings.TrimPrefix(kv, "GODEBUG=") + "," + godebug
		default:
			out = append(out, kv)
		}
	}
	return append(out, "GODEBUG="+godebug), nil
}

// socketPair returns the parent's end of a packet socket pair, and the
// payload's.
func socketPair() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "mech-parent"), os.NewFile(uintptr(fds[1]), "mech-payload")
	defer ours.Close()
	c, err := net.FileConn(ours)
	if err != nil {
		theirs.Close()
		return nil, nil, fmt.Errorf("socket pair: %w", err)
	}
	return c.(*net.UnixConn), theirs, nil
}

// launch starts the payload and waits for it on a thread of its own: with
// PTRACE_TRACEME the thread that forks becomes the tracer, and every ptrace
// request must come from it. The payload's standard input and output are
// closed; its standard error is ours, for the report of a crash.
func (p *process) launch(exe string, env []string, socket *os.File, t *tracer, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	closed := ^uintptr(0)
	attr := &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{closed, closed, uintptr(syscall.Stderr), socket.Fd()},
		Sys:   &syscall.SysProcAttr{Ptrace: t != nil, Pdeathsig: syscall.SIGKILL, PidFD: &p.pidfd},
	}
	pid, err := syscall.ForkExec(exe, []string{exe}, attr)
	if err != nil {
		started <- fmt.Errorf("start the payload: %w", err)
		return
	}
	p.pid = pid
	started <- nil
	if t == nil {
		status, err := waitPid(pid)
		p.exited <- ended{status: status, err: err}
		return
	}
	p.exited <- t.trace(pid)
}

// waitPid waits for the next change of state of process pid.
func waitPid(pid int) (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err != unix.EINTR {
			if err != nil {
				return ws, fmt.Errorf("wait for the payload: %w", err)
			}
			return ws, nil
		}
	}
}

// run lets the payload loop once obs, unless nil, watches it, and returns
// what it measured.
func (p *process) run(obs observer) (Sample, error) {
	_, listener, err := p.receive()
	if err != nil {
		return Sample{}, err
	}
	if obs != nil {
		err = obs.watch(p.pid, listener)
	} else if listener != nil {
		err = listener.Close()
	}
	if err != nil {
		return Sample{}, err
	}
	if _, err := p.conn.Write([]byte{goByte}); err != nil {
		return Sample{}, p.fail(fmt.Errorf("start the payload's loop: %w", err))
	}
	report, _, err := p.receive()
	if err != nil {
		return Sample{}, err
	}
	if err := p.succeeded(); err != nil {
		return Sample{}, err
	}
	sample := Sample{LoopNs: report.LoopNs, Intercepted: p.ended.intercepted}
	if obs != nil {
		sample.Intercepted, err = obs.seen(p.pid)
	}
	return sample, err
}

// receive returns the payload's next message, and the descriptor attached
// to it, if any.
func (p *process) receive() (message, *os.File, error) {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := p.conn.ReadMsgUnix(buf, oob)
	if errors.Is(err, io.EOF) {
		return message{}, nil, p.failed(errors.New("the payload hung up before it reported"))
	}
	if err != nil {
		return message{}, nil, p.fail(fmt.Errorf("read from the payload: %w", err))
	}
	fd, err := attachedFile(oob[:oobn])
	if err != nil {
		return message{}, nil, p.fail(err)
	}
	var msg message
	if err := json.Unmarshal(buf[:n], &msg); err != nil {
		closeIfAny(fd)
		return message{}, nil, p.fail(fmt.Errorf("decode the payload's message %q: %w", buf[:n], err))
	}
	if msg.Error != "" {
		closeIfAny(fd)
		return message{}, nil, p.failed(fmt.Errorf("payload: %s", msg.Error))
	}
	return msg, fd, nil
}

func closeIfAny(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// attachedFile returns the descriptor carried by a message's control data,
// nil when there is none.
func attachedFile(oob []byte) (*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("parse the payload's control message: %w", err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("the payload sent %d control messages, want 1", len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("the payload sent descriptors %v (%v), want one", fds, err)
	}
	return os.NewFile(uintptr(fds[0]), "seccomp-listener"), nil
}

// fail kills the payload after err and returns err, explained.
func (p *process) fail(err error) error {
	p.stop()
	return p.explain(err)
}

// failed returns err, which the payload reported or caused by hanging up,
// explained once the payload has ended on its own.
func (p *process) failed(err error) error {
	p.reap()
	return p.explain(err)
}

// explain returns err, replaced by the context's error when the context
// ended, and completed with how the payload ended unless it was killed or
// succeeded.
func (p *process) explain(err error) error {
	if ctxErr := p.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	e := p.ended
	if e.err != nil || e.status.Signaled() && e.status.Signal() == unix.SIGKILL || e.status.Exited() && e.status.ExitStatus() == 0 {
		return err
	}
	return fmt.Errorf("%w (the payload %s)", err, describe(e.status))
}

// succeeded waits for the payload to end and returns nil when it exited
// with status 0.
func (p *process) succeeded() error {
	switch e := p.reap(); {
	case p.ctx.Err() != nil:
		return p.ctx.Err()
	case e.err != nil:
		return e.err
	case !e.status.Exited() || e.status.ExitStatus() != 0:
		return fmt.Errorf("the payload %s", describe(e.status))
	}
	return nil
}

// describe says how a process ended.
func describe(ws unix.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("was killed by %v", ws.Signal())
	}
	return fmt.Sprintf("exited with status %d", ws.ExitStatus())
}

// stop kills the payload unless it has been reaped, and reaps it.
func (p *process) stop() {
	if p.ended == nil {
		p.kill()
	}
	p.reap()
}

// reap waits for the payload to end, then releases what the parent holds
// for it. It may be called again.
func (p *process) reap() *ended {
	if p.ended == nil {
		e := <-p.exited
		p.ended = &e
		p.unwatch()
		p.conn.Close()
		unix.Close(p.pidfd)
	}
	return p.ended
}

// kill kills the payload. Through the pidfd the signal reaches the payload
// and nothing else, even once its pid is free for reuse.
func (p *process) kill() {
	unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
}

// watch kills the payload when ctx ends, until the function it returns is
// called; that function returns once the watch is over, so that the pidfd
// can be closed.
func (p *process) watch(ctx context.Context) func() {
	stop, over := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(over)
		select {
		case <-ctx.Done():
			p.kill()
		case <-stop:
		}
	}()
	return func() {
		close(stop)
		<-over
	}
}
