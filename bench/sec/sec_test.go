package sec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bench/sec"
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// mixedProgram allows getpid (cacheable), allows close on a negative
// descriptor (reads an argument), answers sendmmsg with ERRNO(1), fstat
// with KILL_PROCESS and allows the rest. It lets futex through for the race
// detector, whose runtime needs it on the measuring thread.
func mixedProgram(t *testing.T) []bpf.Instruction {
	t.Helper()
	var b bpf.Builder
	allow, eperm, kill := b.NewLabel("allow"), b.NewLabel("eperm"), b.NewLabel("kill")
	closeCall := b.NewLabel("close")
	b.Add(bpf.LoadAbs(bpf.OffsetArch))
	b.JumpIf(bpf.JmpJeq, unix.AUDIT_ARCH_X86_64, bpf.Next, kill)
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	b.JumpIf(bpf.JmpJeq, unix.SYS_CLOSE, closeCall, bpf.Next)
	b.JumpIf(bpf.JmpJeq, unix.SYS_SENDMMSG, eperm, bpf.Next)
	b.JumpIf(bpf.JmpJeq, unix.SYS_FSTAT, kill, allow)
	b.Bind(closeCall)
	b.Add(bpf.LoadAbs(bpf.ArgHigh(0)))
	b.JumpIf(bpf.JmpJeq, 0xffffffff, allow, eperm)
	b.Bind(eperm)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ERRNO | 1))
	b.Bind(kill)
	b.Add(bpf.Ret(unix.SECCOMP_RET_KILL_PROCESS))
	b.Bind(allow)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	prog, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func pick(names ...string) []sec.Call {
	var calls []sec.Call
	for _, c := range sec.DefaultCalls() {
		for _, n := range names {
			if c.Name == n {
				calls = append(calls, c)
			}
		}
	}
	return calls
}

// interpreterVerdict is what bpf.Run says prog decides for c, with ALLOW and
// LOG both reported as ALLOW, as a child sees them.
func interpreterVerdict(t *testing.T, prog []bpf.Instruction, c sec.Call) uint32 {
	t.Helper()
	in := bpf.SeccompData{Nr: uint32(c.Nr), Arch: unix.AUDIT_ARCH_X86_64}
	for i, a := range c.Args {
		in.Args[i] = uint64(a)
	}
	res, err := bpf.Run(prog, &in)
	if err != nil {
		t.Fatal(err)
	}
	switch res.Ret & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW, unix.SECCOMP_RET_LOG:
		return unix.SECCOMP_RET_ALLOW
	}
	return res.Ret
}

func TestRun(t *testing.T) {
	filtertest.RequireSeccomp(t)
	prog := mixedProgram(t)
	calls := pick("getpid", "close", "sendmmsg", "fstat", "read")
	const runs = 3
	rep, err := sec.Run(context.Background(), prog, calls, sec.Options{CallsPerRun: 1000, Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Syscalls) != len(calls) || rep.Instructions != len(prog) || rep.Runs != runs || rep.CallsPerRun != 1000 {
		t.Fatalf("report of %d calls, %d instructions, %d runs of %d: want %d, %d, %d, 1000", len(rep.Syscalls), rep.Instructions, rep.Runs, rep.CallsPerRun, len(calls), len(prog), runs)
	}
	_, errnoOf := filter.DistinctErrnos(prog)
	wantCacheable := map[string]bool{"getpid": true, "read": true}
	for i, s := range rep.Syscalls {
		if s.Call != calls[i] {
			t.Errorf("call %d is %+v, want %+v", i, s.Call, calls[i])
		}
		for name, tm := range map[string]sec.Timing{"allow": s.Allow, "cached": s.Cached, "uncached": s.Uncached} {
			if len(tm.RunsNs) != runs || tm.NsPerCall <= 0 {
				t.Errorf("%s under %s: %v ns per run, median %v: want %d positive samples", s.Name, name, tm.RunsNs, tm.NsPerCall, runs)
			}
		}
		if s.Allow.OverheadNs != nil {
			t.Errorf("%s: the baseline has an overhead against itself, %v", s.Name, *s.Allow.OverheadNs)
		}
		if s.Cached.OverheadNs == nil || s.Uncached.OverheadNs == nil {
			t.Errorf("%s: missing overhead against the baseline", s.Name)
		}
		if s.Allow.Verdict != unix.SECCOMP_RET_ALLOW {
			t.Errorf("%s: allowed by the baseline yet verdict %s", s.Name, filter.ActionName(s.Allow.Verdict))
		}
		want := interpreterVerdict(t, prog, s.Call)
		if s.Cached.Verdict != want {
			t.Errorf("%s: kernel verdict %s (result %+v), interpreter %s", s.Name, filter.ActionName(s.Cached.Verdict), s.Cached.Result, filter.ActionName(want))
		}
		if e, denied := errnoOf[want]; denied && s.Cached.Result.Errno != unix.Errno(e) {
			t.Errorf("%s: denied by %s, returned %+v, want errno %d", s.Name, filter.ActionName(want), s.Cached.Result, e)
		}
		if s.Uncached.Verdict != s.Cached.Verdict || s.Uncached.Result.Errno != s.Cached.Result.Errno {
			t.Errorf("%s: defeating the cache changed the outcome from %+v to %+v", s.Name, s.Cached.Result, s.Uncached.Result)
		}
		if s.Cacheable != wantCacheable[s.Name] {
			t.Errorf("%s: cacheable %t, want %t", s.Name, s.Cacheable, wantCacheable[s.Name])
		}
	}
	a := rep.Aggregate
	if a.CachedOverheadNs != a.CachedNs-a.AllowNs || a.UncachedOverheadNs != a.UncachedNs-a.AllowNs || a.AllowNs <= 0 {
		t.Errorf("inconsistent aggregate %+v", a)
	}
	checkOutputs(t, rep)
}

func checkOutputs(t *testing.T, rep sec.Report) {
	t.Helper()
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", &table)
	for _, s := range rep.Syscalls {
		if !strings.Contains(table.String(), s.Name) {
			t.Errorf("table lacks %s", s.Name)
		}
	}
	if !strings.Contains(table.String(), "aggregate") {
		t.Error("table lacks the aggregate")
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back sec.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Errorf("JSON does not round-trip:\n%s", &js)
	}
}

// TestDefeatingTheCacheKeepsA runs a program that tests A before loading
// anything: a cache-defeating prefix that left the loaded argument in A
// would turn its verdict around.
func TestDefeatingTheCacheKeepsA(t *testing.T) {
	filtertest.RequireSeccomp(t)
	prog := []bpf.Instruction{
		bpf.Jump(bpf.JmpJeq, 0, 0, 1),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
		bpf.Ret(unix.SECCOMP_RET_ERRNO | 5),
	}
	calls := []sec.Call{{Name: "getpid", Nr: unix.SYS_GETPID, Args: [6]uintptr{5: 0xdeadbeef_00000000}}}
	rep, err := sec.Run(context.Background(), prog, calls, sec.Options{CallsPerRun: 10, Runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Syscalls[0]
	if s.Cached.Verdict != unix.SECCOMP_RET_ALLOW || s.Uncached.Verdict != unix.SECCOMP_RET_ALLOW {
		t.Errorf("verdicts %s (cached) and %s (uncached), want ALLOW for both", filter.ActionName(s.Cached.Verdict), filter.ActionName(s.Uncached.Verdict))
	}
}

func TestRunRejects(t *testing.T) {
	ctx := context.Background()
	allow := []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ALLOW)}
	if _, err := sec.Run(ctx, allow, nil, sec.Options{}); err == nil {
		t.Error("Run with no calls: no error")
	}
	if _, err := sec.Run(ctx, allow, sec.DefaultCalls(), sec.Options{Runs: -1}); err == nil {
		t.Error("Run with -1 runs: no error")
	}
	full := make([]bpf.Instruction, bpf.MaxInstructions)
	for i := range full {
		full[i] = bpf.Ret(unix.SECCOMP_RET_ALLOW)
	}
	if _, err := sec.Run(ctx, full, sec.DefaultCalls(), sec.Options{}); err == nil {
		t.Error("Run with a program with no room for the cache-defeating prefix: no error")
	}
}

// TestRunUnderDenyAll measures for longer than the scheduler's 10 ms time
// slice under a program that denies every call, futex, write and exit_group
// included: the children must still report.
func TestRunUnderDenyAll(t *testing.T) {
	filtertest.RequireSeccomp(t)
	if raceEnabled {
		t.Skip("SKIPPED: the race detector's runtime needs futex(2), which this program denies")
	}
	denyAll := []bpf.Instruction{bpf.Ret(unix.SECCOMP_RET_ERRNO | 1)}
	rep, err := sec.Run(context.Background(), denyAll, sec.DefaultCalls(), sec.Options{CallsPerRun: 50_000, Runs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Syscalls {
		if s.Cached.Verdict != denyAll[0].K || s.Uncached.Verdict != denyAll[0].K {
			t.Errorf("%s: verdicts %s and %s, want ERRNO(1)", s.Name, filter.ActionName(s.Cached.Verdict), filter.ActionName(s.Uncached.Verdict))
		}
	}
}
