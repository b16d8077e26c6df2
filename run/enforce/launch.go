package enforce

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/run/enforce/shim"
)

// shimProcess is the supervisor's view of a shim it started.
type shimProcess struct {
	proc *exec.Cmd
	sock *os.File
	// listeners delivers the listener the shim sends, at most one.
	listeners chan int
	// outcome delivers, once the shim's end of the socket is closed, nil if
	// the command was executed, else why it was not.
	outcome chan error
}

// startShim starts the shim, which waits for its request (request). It
// runs nothing of the command until it has one.
func startShim(cmd Command, opt Options) (*shimProcess, error) {
	path := opt.Shim
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("enforce: find own binary for the shim: %w", err)
		}
		path = shimPath(exe)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("enforce: socket to the shim: %w", err)
	}
	sock, peer := os.NewFile(uintptr(fds[0]), "syscell-run"), os.NewFile(uintptr(fds[1]), "syscell-run-shim")
	defer peer.Close()
	c := exec.Command(path)
	// Asynchronous preemption would signal the filtered thread, whose
	// handler returns through rt_sigreturn, which the policy may deny.
	c.Env = []string{ShimEnv + "=1", "GODEBUG=asyncpreemptoff=1"}
	c.Stdin, c.Stdout, c.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	c.ExtraFiles = []*os.File{peer}
	c.SysProcAttr = opt.SysProcAttr
	if err := c.Start(); err != nil {
		sock.Close()
		return nil, fmt.Errorf("enforce: start the shim %s: %w", path, err)
	}
	return &shimProcess{proc: c, sock: sock, listeners: make(chan int, 1), outcome: make(chan error, 1)}, nil
}

// request sends the shim req, and follows what it writes from then on.
// On a failure the shim is killed, having run nothing of the command.
func (s *shimProcess) request(req shim.Request) error {
	payload, err := req.Encode()
	if err != nil {
		return s.cancel(fmt.Errorf("enforce: encode the shim's request: %w", err))
	}
	// The shim reads the whole request before it writes anything.
	if err := s.send(payload); err != nil {
		return s.cancel(err)
	}
	go s.read()
	return nil
}

// cancel kills a shim that has had no request, and returns err.
func (s *shimProcess) cancel(err error) error {
	s.sock.Close()
	return s.abort(err)
}

// send writes the request and closes the supervisor's side of the stream,
// which ends the request.
func (s *shimProcess) send(payload []byte) error {
	if _, err := s.sock.Write(payload); err != nil {
		return fmt.Errorf("enforce: send the shim its request: %w", err)
	}
	if err := unix.Shutdown(int(s.sock.Fd()), unix.SHUT_WR); err != nil {
		return fmt.Errorf("enforce: send the shim its request: %w", err)
	}
	return nil
}

// read follows what the shim writes until its end of the socket closes.
func (s *shimProcess) read() {
	defer s.sock.Close()
	fd := int(s.sock.Fd())
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var msg []byte
	for {
		n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			s.outcome <- fmt.Errorf("enforce: read from the shim: %w", err)
			return
		}
		if n == 0 {
			break
		}
		if err := s.takeListener(oob[:oobn]); err != nil {
			s.outcome <- err
			return
		}
		msg = append(msg, buf[:n]...)
	}
	s.outcome <- shimOutcome(msg)
}

// takeListener passes on the descriptor a control message carries.
func (s *shimProcess) takeListener(oob []byte) error {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("enforce: message from the shim: %w", err)
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			return fmt.Errorf("enforce: message from the shim: %w", err)
		}
		for _, fd := range fds {
			select {
			case s.listeners <- fd:
			default:
				unix.Close(fd)
				return errors.New("enforce: the shim sent more than one listener")
			}
		}
	}
	return nil
}

// shimOutcome reads what the shim wrote.
func shimOutcome(msg []byte) error {
	var ready bool
	for len(msg) > 0 {
		switch msg[0] {
		case shim.Ready:
			ready = true
		case shim.Listener:
		case shim.Fail:
			return fmt.Errorf("enforce: the command did not start: %s", msg[1:])
		default:
			return fmt.Errorf("enforce: the shim wrote %q", msg)
		}
		msg = msg[1:]
	}
	if !ready {
		return errors.New("enforce: the shim exited before installing the filter")
	}
	return nil
}

// listener returns the listener the shim sends, or why it sent none.
func (s *shimProcess) listener() (*notify.Listener, error) {
	select {
	case fd := <-s.listeners:
		return notify.NewListener(fd)
	case err := <-s.outcome:
		if err == nil {
			err = errors.New("enforce: the shim executed the command without sending its listener")
		}
		return nil, err
	}
}

// started returns nil once the shim has executed the command, or why it
// did not.
func (s *shimProcess) started() error { return <-s.outcome }

// abort kills a shim that failed, waits for it, and returns err.
func (s *shimProcess) abort(err error) error {
	s.proc.Process.Kill()
	s.proc.Wait()
	return err
}

// wait waits for the command to exit, forwarding signals to it, and kills
// it when ctx is done.
func (s *shimProcess) wait(ctx context.Context, signals <-chan os.Signal) (*os.ProcessState, error) {
	exited := make(chan error, 1)
	go func() { exited <- s.proc.Wait() }()
	done := ctx.Done()
	for {
		select {
		case err := <-exited:
			var exitErr *exec.ExitError
			if err != nil && !errors.As(err, &exitErr) {
				return s.proc.ProcessState, fmt.Errorf("enforce: wait for the command: %w", err)
			}
			return s.proc.ProcessState, context.Cause(ctx)
		case sig := <-signals:
			s.proc.Process.Signal(sig)
		case <-done:
			s.proc.Process.Kill()
			done = nil
		}
	}
}
