package notify_test

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/notify"
)

// init keeps the main goroutine on the main thread, so that no target
// runs there: the runtime ends the thread of a goroutine that exits
// locked to it, but never the main thread, whose filter would then keep
// a user for ever.
func init() {
	runtime.LockOSThread()
}

// target is a thread of the test process under a filter that notifies some
// calls. Supervisor and target share the process, which keeps the tests
// fast; no_new_privs and the filter stay with the thread, which ends with
// its goroutine.
type target struct {
	tid      int
	listener *notify.Listener
	calls    chan call
	exited   chan struct{}
}

type call struct {
	nr   uintptr
	args [6]uintptr
	done chan result
}

type result struct {
	r1    uintptr
	errno syscall.Errno
}

// startTarget starts a thread whose calls to notified go to a listener.
func startTarget(t testing.TB, notified ...uintptr) *target {
	t.Helper()
	if err := filter.FlagsSupported(filter.FlagNewListener); err != nil {
		if errors.Is(err, filter.ErrNotSupported) {
			t.Skipf("SKIPPED: this kernel has no seccomp user notification: %v", err)
		}
		t.Fatal(err)
	}
	prog := notifyProgram(t, notified)
	tg := &target{calls: make(chan call), exited: make(chan struct{})}
	ready := make(chan error)
	go func() {
		defer close(tg.exited)
		// Never unlocked: the runtime ends the thread with the goroutine.
		runtime.LockOSThread()
		tg.tid = unix.Gettid()
		fd, err := filter.Install(prog, filter.FlagNewListener)
		if err == nil {
			tg.listener, err = notify.NewListener(fd)
		}
		ready <- err
		if err != nil {
			return
		}
		for c := range tg.calls {
			a := c.args
			// Not RawSyscall6: a call waiting for the supervisor must give
			// up its P, or a stop of the world would wait for it while
			// the supervisor waits for the world.
			r1, _, errno := unix.Syscall6(c.nr, a[0], a[1], a[2], a[3], a[4], a[5])
			c.done <- result{r1, errno}
		}
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tg.stop()
		tg.listener.Close()
	})
	return tg
}

// notifyProgram notifies the calls to nrs on x86_64 and allows the rest.
func notifyProgram(t testing.TB, nrs []uintptr) []bpf.Instruction {
	t.Helper()
	var b bpf.Builder
	notif := b.NewLabel("notify")
	allow := b.NewLabel("allow")
	b.Add(bpf.LoadAbs(bpf.OffsetArch))
	b.JumpIf(bpf.JmpJeq, unix.AUDIT_ARCH_X86_64, bpf.Next, allow)
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	for _, nr := range nrs {
		b.JumpIf(bpf.JmpJeq, uint32(nr), notif, bpf.Next)
	}
	b.Bind(allow)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	b.Bind(notif)
	b.Add(bpf.Ret(unix.SECCOMP_RET_USER_NOTIF))
	prog, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// start makes a call on the target thread; the result arrives on the
// channel returned.
func (tg *target) start(nr uintptr, args ...uintptr) <-chan result {
	c := call{nr: nr, done: make(chan result, 1)}
	copy(c.args[:], args)
	tg.calls <- c
	return c.done
}

// stop ends the target thread, once, and waits for it to exit.
func (tg *target) stop() {
	select {
	case <-tg.exited:
	default:
		close(tg.calls)
		<-tg.exited
	}
}

func receive(t *testing.T, l *notify.Listener) *notify.Notification {
	t.Helper()
	n, err := l.Receive()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGetSizes(t *testing.T) {
	if err := filter.Supported(); err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	s, err := notify.GetSizes()
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("SKIPPED: this kernel predates SECCOMP_GET_NOTIF_SIZES (Linux 5.0): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.Notif < 80 || s.Resp < 24 || s.Data != 64 {
		t.Errorf("sizes %+v, want at least Linux 5.0's 80, 24 and 64", s)
	}
}

// TestNotification checks what a notification says about the call.
func TestNotification(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPGID)
	args := []uintptr{0, 1 << 40, 2, ^uintptr(0), 4, 5}
	pgid, err := unix.Getpgid(0)
	if err != nil {
		t.Fatal(err)
	}
	var ips []uint64
	for range 2 {
		done := tg.start(unix.SYS_GETPGID, args...)
		n := receive(t, tg.listener)
		want := bpf.SeccompData{Nr: unix.SYS_GETPGID, Arch: unix.AUDIT_ARCH_X86_64, IP: n.Data.IP}
		for i, a := range args {
			want.Args[i] = uint64(a)
		}
		if n.Data != want || n.Pid != tg.tid {
			t.Errorf("notification %+v from %d, want %+v from the target thread %d", n.Data, n.Pid, want, tg.tid)
		}
		ips = append(ips, n.Data.IP)
		if err := tg.listener.Respond(notify.Response{ID: n.ID, Continue: true}); err != nil {
			t.Fatal(err)
		}
		if r := <-done; r.errno != 0 || int(r.r1) != pgid {
			t.Errorf("continued getpgid(0): %d, errno %d; want the process group %d", r.r1, r.errno, pgid)
		}
	}
	if ips[0] == 0 || ips[0] != ips[1] {
		t.Errorf("instruction pointers %#x: want the same non-zero address for two calls from one place", ips)
	}
}

// TestRespond checks every kind of answer against what the call returns.
func TestRespond(t *testing.T) {
	for _, tc := range []struct {
		name  string
		resp  notify.Response
		want  result
		ppid0 bool // the call really ran: r1 is the parent's pid
	}{
		{"continue", notify.Response{Continue: true}, result{}, true},
		{"errno", notify.Response{Errno: unix.EPERM}, result{^uintptr(0), unix.EPERM}, false},
		{"value", notify.Response{Val: 42}, result{42, 0}, false},
		{"negative value", notify.Response{Val: -7}, result{^uintptr(0), 7}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := startTarget(t, unix.SYS_GETPPID)
			done := tg.start(unix.SYS_GETPPID)
			n := receive(t, tg.listener)
			tc.resp.ID = n.ID
			if err := tg.listener.Respond(tc.resp); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if tc.ppid0 {
				want.r1 = uintptr(os.Getppid())
			}
			if got := <-done; got != want {
				t.Errorf("getppid answered %+v returned %d, errno %d; want %d, errno %d", tc.resp, got.r1, got.errno, want.r1, want.errno)
			}
		})
	}
}

func TestValid(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPPID)
	done := tg.start(unix.SYS_GETPPID)
	n := receive(t, tg.listener)
	if err := tg.listener.Valid(n.ID); err != nil {
		t.Fatalf("pending notification: %v", err)
	}
	if err := tg.listener.Respond(notify.Response{ID: n.ID, Errno: unix.EPERM}); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := tg.listener.Valid(n.ID); !errors.Is(err, notify.ErrNotPending) {
		t.Errorf("answered notification: Valid says %v, want ErrNotPending", err)
	}
	if err := tg.listener.Respond(notify.Response{ID: n.ID, Errno: unix.EPERM}); !errors.Is(err, notify.ErrNotPending) {
		t.Errorf("second answer: %v, want ErrNotPending", err)
	}
}

func TestReceiveNoTasks(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPPID)
	tg.stop()
	n, err := tg.listener.Receive()
	if !errors.Is(err, notify.ErrNoTasks) {
		t.Errorf("once the only filtered thread exited: Receive returned %+v, %v; want ErrNoTasks", n, err)
	}
}

// TestClose checks that closing the listener fails the call waiting for
// an answer and ends a blocked Receive.
func TestClose(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPPID, unix.SYS_GETPGID)
	done := tg.start(unix.SYS_GETPPID)
	receive(t, tg.listener)
	received := make(chan error)
	go func() {
		_, err := tg.listener.Receive()
		received <- err
	}()
	// Give Receive time to block; if it has not yet, it fails just the
	// same on the closed listener.
	time.Sleep(10 * time.Millisecond)
	if err := tg.listener.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.errno != unix.ENOSYS {
		t.Errorf("call pending when the listener closed: errno %d, want ENOSYS", r.errno)
	}
	if err := <-received; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Receive on a closed listener: %v, want os.ErrClosed", err)
	}
	if r := <-tg.start(unix.SYS_GETPGID); r.errno != unix.ENOSYS {
		t.Errorf("call notified after the listener closed: errno %d, want ENOSYS", r.errno)
	}
}

// TestCloseInterrupts closes listeners whose Receive is at every point of
// entering its wait, from not yet started to asleep in the kernel: each
// Receive must return os.ErrClosed, however close to the wait Close comes.
func TestCloseInterrupts(t *testing.T) {
	for i := range 40 {
		tg := startTarget(t, unix.SYS_GETPPID)
		received := make(chan error, 1)
		go func() {
			_, err := tg.listener.Receive()
			received <- err
		}()
		time.Sleep(time.Duration(i%8) * 20 * time.Microsecond)
		if err := tg.listener.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-received:
			if !errors.Is(err, os.ErrClosed) {
				t.Fatalf("round %d: Receive on a closed listener: %v, want os.ErrClosed", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Receive still waiting 5 s after Close", i)
		}
		tg.stop()
	}
}

// TestPending checks that Pending sees a notification queued, and no
// longer once it is received.
func TestPending(t *testing.T) {
	tg := startTarget(t, unix.SYS_GETPPID)
	if tg.listener.Pending() {
		t.Fatal("Pending before any call: true")
	}
	done := tg.start(unix.SYS_GETPPID)
	deadline := time.Now().Add(5 * time.Second)
	for !tg.listener.Pending() {
		if time.Now().After(deadline) {
			t.Fatal("Pending 5 s after a notified call: still false")
		}
		time.Sleep(time.Millisecond)
	}
	n := receive(t, tg.listener)
	if tg.listener.Pending() {
		t.Error("Pending once the only notification was received: true")
	}
	if err := tg.listener.Respond(notify.Response{ID: n.ID, Continue: true}); err != nil {
		t.Fatal(err)
	}
	<-done
}
