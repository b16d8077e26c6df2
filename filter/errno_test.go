package filter_test

import (
	"context"
	"slices"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func TestDistinctErrnos(t *testing.T) {
	const (
		kill  = unix.SECCOMP_RET_KILL_PROCESS
		eperm = unix.SECCOMP_RET_ERRNO | 1
		trap  = unix.SECCOMP_RET_TRAP
		log   = unix.SECCOMP_RET_LOG
		allow = unix.SECCOMP_RET_ALLOW
	)
	prog := []bpf.Instruction{
		0:  bpf.LoadAbs(bpf.OffsetNr),
		1:  bpf.Jump(bpf.JmpJeq, 1, 0, 1),
		2:  bpf.Ret(kill),
		3:  bpf.Jump(bpf.JmpJeq, 2, 0, 1),
		4:  bpf.Ret(eperm),
		5:  bpf.Jump(bpf.JmpJeq, 3, 0, 1),
		6:  bpf.Ret(log),
		7:  bpf.Jump(bpf.JmpJeq, 4, 0, 1),
		8:  bpf.Ret(kill),
		9:  bpf.Jump(bpf.JmpJeq, 5, 0, 1),
		10: bpf.Ret(trap),
		11: bpf.Ret(allow),
		12: bpf.Ret(unix.SECCOMP_RET_KILL_THREAD), // unreachable
	}
	orig := slices.Clone(prog)
	got, errnoOf := filter.DistinctErrnos(prog)
	first := uint32(filter.FirstDistinctErrno)
	want := slices.Clone(prog)
	want[2] = bpf.Ret(unix.SECCOMP_RET_ERRNO | first)
	want[4] = bpf.Ret(unix.SECCOMP_RET_ERRNO | (first + 1))
	want[8] = want[2]
	want[10] = bpf.Ret(unix.SECCOMP_RET_ERRNO | (first + 2))
	if !slices.Equal(got, want) {
		t.Errorf("rewritten program:\n got %v\nwant %v", got, want)
	}
	wantErrnos := map[uint32]uint16{kill: filter.FirstDistinctErrno, eperm: filter.FirstDistinctErrno + 1, trap: filter.FirstDistinctErrno + 2}
	if len(errnoOf) != len(wantErrnos) {
		t.Errorf("errnoOf = %v, want %v", errnoOf, wantErrnos)
	}
	for ret, e := range wantErrnos {
		if errnoOf[ret] != e {
			t.Errorf("errnoOf[%s] = %d, want %d", filter.ActionName(ret), errnoOf[ret], e)
		}
	}
	if !slices.Equal(prog, orig) {
		t.Error("DistinctErrnos modified its input")
	}
}

func TestVerdict(t *testing.T) {
	errnoOf := map[uint32]uint16{unix.SECCOMP_RET_TRAP: filter.FirstDistinctErrno}
	for _, tc := range []struct {
		res  filter.Result
		want uint32
	}{
		{filter.Result{Errno: filter.FirstDistinctErrno}, unix.SECCOMP_RET_TRAP},
		{filter.Result{Errno: unix.EBADF}, unix.SECCOMP_RET_ALLOW},
		{filter.Result{R1: 42}, unix.SECCOMP_RET_ALLOW},
		{filter.Result{Errno: filter.FirstDistinctErrno + 1}, unix.SECCOMP_RET_ALLOW},
	} {
		if got := filter.Verdict(tc.res, errnoOf); got != tc.want {
			t.Errorf("Verdict(%+v) = %s, want %s", tc.res, filter.ActionName(got), filter.ActionName(tc.want))
		}
	}
}

// TestDistinctErrnosInKernel is the pattern of a kernel equivalence test:
// every action turned into its errno, nothing dies, and each stopped call
// names the action that stopped it.
func TestDistinctErrnosInKernel(t *testing.T) {
	filtertest.RequireSeccomp(t)
	rules := []rule{
		{unix.SYS_GETPID, unix.SECCOMP_RET_KILL_PROCESS},
		{unix.SYS_GETPPID, unix.SECCOMP_RET_ERRNO | 1},
		{unix.SYS_GETTID, unix.SECCOMP_RET_TRAP},
		{unix.SYS_GETUID, unix.SECCOMP_RET_USER_NOTIF},
		{unix.SYS_GETGID, unix.SECCOMP_RET_TRACE | 7},
		{unix.SYS_GETEGID, unix.SECCOMP_RET_KILL_THREAD},
		{unix.SYS_GETEUID, unix.SECCOMP_RET_LOG},
	}
	prog, errnoOf := filter.DistinctErrnos(program(t, rules...))
	calls := []filter.Syscall{{Nr: unix.SYS_GETPGRP}}
	for _, r := range rules {
		calls = append(calls, filter.Syscall{Nr: r.Nr})
	}
	res, err := filter.Child{}.Probe(context.Background(), prog, calls)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{unix.SECCOMP_RET_ALLOW}
	for _, r := range rules[:len(rules)-1] {
		want = append(want, r.Ret)
	}
	want = append(want, unix.SECCOMP_RET_ALLOW) // LOG lets the call run
	for i, r := range res {
		if got := filter.Verdict(r, errnoOf); got != want[i] {
			t.Errorf("call %d: result %+v, verdict %s, want %s", calls[i].Nr, r, filter.ActionName(got), filter.ActionName(want[i]))
		}
	}
}

// TestErrnoRange shows why the errnos stop at LastDistinctErrno: the kernel
// caps larger ones at 4095, and RawSyscall6 reads -4095 as a successful
// return rather than as an errno.
func TestErrnoRange(t *testing.T) {
	filtertest.RequireSeccomp(t)
	const minus4095 = ^uintptr(4095 - 1)
	cases := []struct {
		nr   uintptr
		data uint32
		want filter.Result
	}{
		{unix.SYS_GETPID, filter.FirstDistinctErrno, filter.Result{R1: ^uintptr(0), Errno: filter.FirstDistinctErrno}},
		{unix.SYS_GETPPID, filter.LastDistinctErrno, filter.Result{R1: ^uintptr(0), Errno: filter.LastDistinctErrno}},
		{unix.SYS_GETUID, 4095, filter.Result{R1: minus4095}},
		{unix.SYS_GETGID, 5000, filter.Result{R1: minus4095}},
		{unix.SYS_GETEUID, 0xffff, filter.Result{R1: minus4095}},
	}
	var rules []rule
	var calls []filter.Syscall
	for _, c := range cases {
		rules = append(rules, rule{c.nr, unix.SECCOMP_RET_ERRNO | c.data})
		calls = append(calls, filter.Syscall{Nr: c.nr})
	}
	res, err := filter.Child{}.Probe(context.Background(), program(t, rules...), calls)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if res[i] != c.want {
			t.Errorf("ERRNO(%d): got %+v, want %+v", c.data, res[i], c.want)
		}
	}
}
