package notify_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
)

// TestSendFD answers a call with a descriptor of the supervisor's: the
// call returns a new descriptor of the caller's (the test process's
// here) for the same pipe, close-on-exec, and a second answer finds the
// call no longer waiting.
func TestSendFD(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPPID)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	done := tg.start(unix.SYS_GETPPID)
	n := receive(t, tg.listener)
	fd, err := tg.listener.SendFD(n.ID, p[1], true)
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.errno != 0 || int(got.r1) != fd {
		t.Fatalf("the call returned %d, errno %d; want %d", got.r1, got.errno, fd)
	}
	defer unix.Close(fd)
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("descriptor flags %#x, %v: want close-on-exec", flags, err)
	}
	if _, err := unix.Write(fd, []byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if n, err := unix.Read(p[0], buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Errorf("read %d %q, %v: the descriptor sent is not the pipe", n, buf, err)
	}
	if _, err := tg.listener.SendFD(n.ID, p[1], true); !errors.Is(err, notify.ErrNotPending) {
		t.Errorf("a second answer: %v, want ErrNotPending", err)
	}
}
