package snapshot_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/run/cell/snapshot"
)

// epochPage stands for the audit library's epoch page.
var epochPage = [2]uint64{0x5ce11, 42}

// TestTake has a thread of the test process make getppid calls, with
// known arguments, that a filter notifies, and takes each one's snapshot:
// it must hold the call's registers, the stack pointer /proc reports, the
// stack's bytes from there up, and the epoch page; and it must be the
// notification's, not a stale one's or another thread's.
func TestTake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: loading eBPF programs needs root, and this is uid", os.Geteuid())
	}
	snaps, err := snapshot.Load(uint64(uintptr(unsafe.Pointer(&epochPage))))
	if err != nil {
		t.Fatal(err)
	}
	defer snaps.Close()
	if err := snaps.Watch(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	calls, l := notifyingThread(t)
	for i := range uintptr(3) {
		args := [6]uintptr{11 + i, 22, 33, 44, 55, 66}
		done := make(chan struct{})
		calls <- call{args, done}
		n, err := l.Receive()
		if err != nil {
			t.Fatal(err)
		}
		snap := take(t, snaps, n)
		checkSnapshot(t, n, snap, args)
		if _, ok := snaps.Take(n.Pid, n.ID+1, make([]byte, snapshot.StackBytes)); ok {
			t.Error("a snapshot for another notification's id")
		}
		if _, ok := snaps.Take(n.Pid+snapshotSlots, n.ID, make([]byte, snapshot.StackBytes)); ok {
			t.Error("a snapshot for another thread whose id shares the slot")
		}
		if err := l.Respond(notify.Response{ID: n.ID, Continue: true}); err != nil {
			t.Fatal(err)
		}
		<-done
	}
}

const snapshotSlots = 256

// take waits, briefly, for the thread to be switched out.
func take(t *testing.T, snaps *snapshot.Snapshots, n *notify.Notification) snapshot.Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if snap, ok := snaps.Take(n.Pid, n.ID, make([]byte, snapshot.StackBytes)); ok {
			return snap
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatalf("no snapshot of thread %d for notification %#x", n.Pid, n.ID)
	return snapshot.Snapshot{}
}

func checkSnapshot(t *testing.T, n *notify.Notification, snap snapshot.Snapshot, args [6]uintptr) {
	t.Helper()
	r := snap.Regs
	got := []uint64{r.Nr, r.DI, r.SI, r.DX, r.R10, r.R8, r.R9, r.IP}
	want := []uint64{unix.SYS_GETPPID, uint64(args[0]), uint64(args[1]), uint64(args[2]), uint64(args[3]), uint64(args[4]), uint64(args[5]), n.Data.IP}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("registers %#x, want %#x", got, want)
	}
	if snap.Tgid != os.Getpid() || snap.Started == 0 {
		t.Errorf("process %d, started at %d; want %d, a time", snap.Tgid, snap.Started, os.Getpid())
	}
	if sp := procSP(t, n.Pid); r.SP != sp {
		t.Errorf("stack pointer %#x, /proc says %#x", r.SP, sp)
	}
	if !snap.EpochOK || snap.Epoch != epochPage {
		t.Errorf("epoch %v (%v), want %v", snap.Epoch, snap.EpochOK, epochPage)
	}
	if len(snap.Stack) != snapshot.StackBytes {
		t.Fatalf("%d bytes of stack, want %d", len(snap.Stack), snapshot.StackBytes)
	}
	stack := make([]byte, len(snap.Stack))
	local := []unix.Iovec{{Base: &stack[0], Len: uint64(len(stack))}}
	remote := []unix.RemoteIovec{{Base: uintptr(r.SP), Len: len(stack)}}
	if _, err := unix.ProcessVMReadv(os.Getpid(), local, remote, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snap.Stack, stack) {
		t.Error("the stack copied differs from the thread's stack")
	}
}

// procSP is the stack pointer /proc/TID/syscall gives.
func procSP(t *testing.T, tid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", tid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	if len(f) != 9 {
		t.Fatalf("/proc/%d/syscall: %q", tid, data)
	}
	sp, err := strconv.ParseUint(strings.TrimPrefix(f[7], "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

type call struct {
	args [6]uintptr
	done chan struct{}
}

// notifyingThread starts a thread whose getppid calls a filter notifies
// to the returned listener; it makes one per call sent.
func notifyingThread(t *testing.T) (chan<- call, *notify.Listener) {
	t.Helper()
	if err := filter.FlagsSupported(filter.FlagNewListener); errors.Is(err, filter.ErrNotSupported) {
		t.Skipf("SKIPPED: this kernel has no seccomp user notification: %v", err)
	}
	var b bpf.Builder
	notif := b.NewLabel("notify")
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	b.JumpIf(bpf.JmpJeq, unix.SYS_GETPPID, notif, bpf.Next)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	b.Bind(notif)
	b.Add(bpf.Ret(unix.SECCOMP_RET_USER_NOTIF))
	prog, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan call)
	ready := make(chan error)
	var l *notify.Listener
	go func() {
		// Never unlocked: the filter ends with the thread.
		runtime.LockOSThread()
		fd, err := filter.Install(prog, filter.FlagNewListener)
		if err == nil {
			l, err = notify.NewListener(fd)
		}
		ready <- err
		for c := range calls {
			a := c.args
			unix.Syscall6(unix.SYS_GETPPID, a[0], a[1], a[2], a[3], a[4], a[5])
			close(c.done)
		}
	}()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(calls)
		l.Close()
	})
	return calls, l
}
