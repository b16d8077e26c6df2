package filter_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func init() {
	filter.RegisterChild("filter_test.fail", func(req, reply []byte) (int, error) {
		return 0, errors.New("the role failed on purpose")
	})
	filter.RegisterChild("filter_test.panic", func(req, reply []byte) (int, error) {
		panic("the role panicked on purpose")
	})
	filter.RegisterChild("filter_test.sleep", func(req, reply []byte) (int, error) {
		time.Sleep(time.Hour)
		return 0, nil
	})
	filter.RegisterChild("filter_test.env", func(req, reply []byte) (int, error) {
		return copy(reply, os.Getenv("GODEBUG")), nil
	})
	filter.RegisterChild("filter_test.mute", muteRole)
}

func TestChildUnknownRole(t *testing.T) {
	_, err := filter.Child{}.Run(context.Background(), "filter_test.nonexistent", nil, 0)
	if err == nil || !strings.Contains(err.Error(), `no child role "filter_test.nonexistent"`) {
		t.Errorf("unknown role: %v", err)
	}
}

func TestChildReportsErrors(t *testing.T) {
	for role, want := range map[string]string{
		"filter_test.fail":  "the role failed on purpose",
		"filter_test.panic": "the role panicked on purpose",
	} {
		_, err := filter.Child{}.Run(context.Background(), role, nil, 0)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("role %s: error %v, want it to say %q", role, err, want)
		}
	}
}

func TestChildHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := filter.Child{}.Run(ctx, "filter_test.sleep", nil, 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("sleeping child: %v, want DeadlineExceeded", err)
	}
}

func TestChildEnvironment(t *testing.T) {
	t.Setenv("GODEBUG", "madvdontneed=1")
	b, err := filter.Child{}.Run(context.Background(), "filter_test.env", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "madvdontneed=1,asyncpreemptoff=1"; got != want {
		t.Errorf("GODEBUG in the child: %q, want %q", got, want)
	}
}

// muteRole installs a program under which the child can neither write nor
// exit, and reports what write returned.
func muteRole(req, reply []byte) (int, error) {
	deny := unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	prog := []bpf.Instruction{
		bpf.LoadAbs(bpf.OffsetNr),
		bpf.Jump(bpf.JmpJeq, unix.SYS_WRITE, 3, 0),
		bpf.Jump(bpf.JmpJeq, unix.SYS_EXIT_GROUP, 2, 0),
		bpf.Jump(bpf.JmpJeq, unix.SYS_EXIT, 1, 0),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
		bpf.Ret(deny),
	}
	if _, err := filter.Install(prog, filter.FlagTSync); err != nil {
		return 0, err
	}
	msg := []byte("can you hear me?\n")
	_, _, e := unix.RawSyscall(unix.SYS_WRITE, 2, uintptr(len(msg)), 0)
	return replyJSON(reply, e)
}

func TestChildReportsWithoutWriteOrExit(t *testing.T) {
	filtertest.RequireSeccomp(t)
	b, err := filter.Child{}.Run(context.Background(), "filter_test.mute", nil, 64)
	if err != nil {
		t.Fatal(err)
	}
	var e syscall.Errno
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if e != unix.EPERM {
		t.Errorf("write in the muted child returned errno %d, want EPERM: the program did not take", e)
	}
}

// TestProbeUnderDenyAll probes for longer than the scheduler's 10 ms time
// slice under a program that denies every call, futex, write and exit_group
// included: the child must still report.
func TestProbeUnderDenyAll(t *testing.T) {
	filtertest.RequireSeccomp(t)
	if raceEnabled {
		t.Skip("SKIPPED: the race detector's runtime needs futex(2), which this program denies")
	}
	const n = 300_000
	calls := make([]filter.Syscall, n)
	for i := range calls {
		calls[i] = filter.Syscall{Nr: unix.SYS_GETPID}
	}
	denyAll := []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))}
	res, err := filter.Child{}.Probe(context.Background(), denyAll, calls)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Errno != unix.EPERM {
			t.Fatalf("call %d: %+v, want EPERM", i, r)
		}
	}
}
