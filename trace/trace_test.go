//go:build linux

package trace_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/fixtures"
	"github.com/syscell/syscell/trace"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.Remove()
	os.Exit(code)
}

// open loads the recorder, or skips, saying why, where this process may
// not load eBPF programs.
func open(t *testing.T, opts trace.Options) *trace.Tracer {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("SKIPPED: the recorder is for x86_64, this is %s", runtime.GOARCH)
	}
	tr, err := trace.Open(opts)
	if errors.Is(err, unix.EPERM) && os.Geteuid() != 0 {
		t.Skipf("SKIPPED: loading eBPF programs needs root: %v", err)
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		t.Skipf("SKIPPED: this kernel cannot run the recorder: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	})
	return tr
}

// run starts a mode of prog traced and returns every event, in order,
// once all its tasks have exited. handle, if not nil, sees each event as
// it comes (a Syscall's Stack is valid only then).
func run(t *testing.T, tr *trace.Tracer, args []string, handle func(any)) []any {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	if err := tr.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var events []any
	exited := false
	for {
		ev, err := tr.Read(20 * time.Millisecond)
		if errors.Is(err, trace.ErrTimeout) {
			if exited && !tracing(t, tr) && tr.Pending() == 0 {
				return events
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				exited = true
			default:
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if handle != nil {
			handle(ev)
		}
		events = append(events, ev)
	}
}

func tracing(t *testing.T, tr *trace.Tracer) bool {
	t.Helper()
	on, err := tr.Tracing()
	if err != nil {
		t.Fatal(err)
	}
	return on
}

func syscalls(events []any) []*trace.Syscall {
	var out []*trace.Syscall
	for _, ev := range events {
		if s, ok := ev.(*trace.Syscall); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestFirstInstruction checks that tracing starts before the command's
// first instruction: the address space is listed first, with the program
// and the dynamic loader, and the first call comes from the loader.
func TestFirstInstruction(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	events := run(t, tr, fixtures.Args(dir, "getpid"), nil)
	as, ok := events[0].(*trace.ASpace)
	if !ok || as.Failed {
		t.Fatalf("first event %#v, want a listed address space", events[0])
	}
	var loader *trace.Map
	for _, ev := range events[1:] {
		m, ok := ev.(*trace.Map)
		if !ok {
			first := ev.(*trace.Syscall)
			if loader == nil || first.Regs.IP < loader.Start || first.Regs.IP >= loader.End {
				t.Errorf("first call at %#x, not in the dynamic loader %+v", first.Regs.IP, loader)
			}
			return
		}
		if filepath.Base(m.Path) == "ld-linux-x86-64.so.2" {
			loader = m
		}
	}
	t.Fatal("no call")
}

// TestMappings checks the mapping events against the files: paths, devices
// and inodes as stat sees them, and the vDSO.
func TestMappings(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	seen := map[string]bool{}
	vdso := false
	for _, ev := range run(t, tr, fixtures.Args(dir, "getpid"), nil) {
		m, ok := ev.(*trace.Map)
		if !ok {
			continue
		}
		switch m.Kind {
		case trace.MapVDSO:
			vdso = true
		case trace.MapFile:
			var st unix.Stat_t
			if err := unix.Stat(m.Path, &st); err != nil {
				t.Errorf("mapping of %q: %v", m.Path, err)
			} else if st.Dev != m.Dev || st.Ino != m.Ino {
				t.Errorf("%s: device %#x inode %d, stat says %#x %d", m.Path, m.Dev, m.Ino, st.Dev, st.Ino)
			}
			seen[filepath.Base(m.Path)] = true
		}
	}
	for _, want := range []string{fixtures.Prog, fixtures.LibGetpid, "libc.so.6", "ld-linux-x86-64.so.2"} {
		if !seen[want] {
			t.Errorf("no mapping of %s", want)
		}
	}
	if !vdso {
		t.Error("no vDSO mapping")
	}
}

// TestMappingChanges checks that loading, unloading and JIT pages change
// the address space, each with a new epoch.
func TestMappingChanges(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	for _, c := range []struct {
		mode string
		want func(*trace.Map) bool
	}{
		{"dlopen", func(m *trace.Map) bool { return filepath.Base(m.Path) == fixtures.LibPlugin }},
		{"jit", func(m *trace.Map) bool { return m.Kind == trace.MapAnon }},
	} {
		t.Run(c.mode, func(t *testing.T) {
			events := run(t, tr, fixtures.Args(dir, c.mode), nil)
			var mapped *trace.Map
			var unmapped bool
			for _, ev := range events {
				switch e := ev.(type) {
				case *trace.Map:
					if c.want(e) {
						mapped = e
					}
				case *trace.Unmap:
					unmapped = unmapped || mapped != nil && e.Start <= mapped.Start && e.End >= mapped.End && e.Epoch > mapped.Epoch
				}
			}
			if mapped == nil || !unmapped {
				t.Errorf("mapped %+v, unmapped later: %v", mapped, unmapped)
			}
		})
	}
}

// TestTasks follows fork, threads and exec: every task is traced from its
// creation to its exit, and nothing is traced afterwards.
func TestTasks(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	for _, c := range []struct {
		mode                     string
		processes, threads, exec int
	}{{"fork", 2, 0, 0}, {"threads", 0, 4, 0}, {"exec", 1, 0, 1}} {
		t.Run(c.mode, func(t *testing.T) {
			events := run(t, tr, fixtures.Args(dir, c.mode), nil)
			live := map[int]bool{}
			var processes, threads, execs int
			for _, ev := range events {
				switch e := ev.(type) {
				case *trace.Fork:
					live[e.ChildTID] = true
					if e.ChildTGID == e.TGID {
						threads++
					} else {
						processes++
					}
				case *trace.Exec:
					execs++
					if filepath.Base(e.Filename) != fixtures.Second {
						t.Errorf("exec of %q", e.Filename)
					}
				case *trace.Exit:
					delete(live, e.TID)
				case *trace.Syscall:
					if e.TID != e.TGID && !live[e.TID] {
						t.Errorf("call of thread %d, which is not traced", e.TID)
					}
				}
			}
			if processes != c.processes || threads != c.threads || execs != c.exec {
				t.Errorf("%d processes, %d threads, %d execs; want %d, %d, %d", processes, threads, execs, c.processes, c.threads, c.exec)
			}
			if len(live) != 0 {
				t.Errorf("tasks %v never exited", live)
			}
		})
	}
}

// TestLearn teaches the program that every getpid at one instruction
// belongs to compartment 7, and checks that each call of the loop is
// either sent as a snapshot or counted, exactly once.
func TestLearn(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	const calls = 100000
	snapshots := 0
	run(t, tr, []string{filepath.Join(dir, fixtures.Prog), "loop", "100000"}, func(ev any) {
		s, ok := ev.(*trace.Syscall)
		if !ok || s.Nr != unix.SYS_GETPID {
			return
		}
		snapshots++
		if _, err := tr.Learn(s.Epoch, s.Regs.IP, nil, 7); err != nil {
			t.Fatal(err)
		}
	})
	counts, err := tr.Counts()
	if err != nil {
		t.Fatal(err)
	}
	counted := counts[trace.CountKey{Compartment: 7, Nr: unix.SYS_GETPID}]
	if snapshots+int(counted) != calls || counted == 0 {
		t.Errorf("%d snapshots and %d counted, want %d calls, most counted", snapshots, counted, calls)
	}
	t.Logf("%d snapshots before the path was learnt, %d counted", snapshots, counted)
}

// TestLost overflows a small ring buffer that nobody reads: the calls that
// did not fit are counted, not silently dropped.
func TestLost(t *testing.T) {
	tr := open(t, trace.Options{RingBytes: 1 << 16})
	dir := fixtures.Require(t)
	cmd := exec.Command(filepath.Join(dir, fixtures.Prog), "loop", "10000")
	if err := tr.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Detach(); err != nil {
		t.Fatal(err)
	}
	delivered := 0
	for {
		ev, err := tr.Read(time.Millisecond)
		if errors.Is(err, trace.ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := ev.(*trace.Syscall); ok && s.Nr == unix.SYS_GETPID {
			delivered++
		}
	}
	lost, err := tr.Lost()
	if err != nil {
		t.Fatal(err)
	}
	if lost.Syscalls == 0 || delivered+int(lost.Syscalls) < 10000 {
		t.Errorf("%d getpid snapshots delivered, %d calls lost: want losses, and every call accounted for", delivered, lost.Syscalls)
	}
}

// TestStackBytes loads the program with the smallest, the largest and
// sizes between (the verifier's work must not depend on the size), and
// records /bin/true with each: every snapshot copies at most the size.
// Sizes outside the range are refused before loading.
func TestStackBytes(t *testing.T) {
	for _, size := range []int{trace.MinStackBytes, 4095, 4096, 4097, trace.DefaultStackBytes, 61440, trace.MaxStackBytes - 1, trace.MaxStackBytes} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			tr := open(t, trace.Options{StackBytes: size})
			calls := syscalls(run(t, tr, []string{"/bin/true"}, nil))
			if len(calls) == 0 {
				t.Fatal("no call")
			}
			for _, s := range calls {
				if len(s.Stack) > size {
					t.Errorf("%d bytes of stack copied", len(s.Stack))
				}
			}
		})
	}
	for _, size := range []int{-1, trace.MinStackBytes - 1, trace.MaxStackBytes + 1} {
		if tr, err := trace.Open(trace.Options{StackBytes: size}); err == nil {
			tr.Close()
			t.Errorf("a stack copy of %d bytes was accepted", size)
		}
	}
}

// TestStackHoles runs prog-origin, whose loader calls readlink at
// start-up with a 4 KiB buffer between the stack pointer and the frames,
// in pages never touched: the program cannot read them, and must copy the
// stack above them, marking them as holes.
func TestStackHoles(t *testing.T) {
	tr := open(t, trace.Options{})
	dir := fixtures.Require(t)
	// Where the buffer lies in its pages depends on the stack's random
	// start: its page may have been touched before.
	for range 20 {
		var readlink *trace.Syscall
		run(t, tr, fixtures.Args(dir, "origin"), func(ev any) {
			if s, ok := ev.(*trace.Syscall); ok && s.Nr == unix.SYS_READLINK {
				c := *s
				c.Stack = slices.Clone(s.Stack)
				readlink = &c
			}
		})
		if readlink == nil {
			t.Fatal("no readlink")
		}
		if len(readlink.Holes) == 0 {
			continue
		}
		sp, end := readlink.Regs.SP, readlink.Regs.SP+uint64(len(readlink.Stack))
		last := readlink.Holes[len(readlink.Holes)-1]
		for _, h := range readlink.Holes {
			if h.Start < sp || h.End > end || h.Start >= h.End || h.Start != sp && h.Start%4096 != 0 || h.End != end && h.End%4096 != 0 {
				t.Errorf("hole %#x-%#x in a copy of %#x-%#x", h.Start, h.End, sp, end)
			}
		}
		// The loader's frames lie above the buffer, up to the initial
		// stack pointer.
		if end-last.End < 256 {
			t.Errorf("the copy of %#x-%#x ends %d bytes above its last hole %#x-%#x", sp, end, end-last.End, last.Start, last.End)
		}
		return
	}
	t.Error("readlink's stack copy never had a hole")
}

// TestLaggingThread checks the phase of a thread its process started
// while starting: its calls serve from its birth, though its process
// does not serve yet, while its main thread's calls before its first
// epoll_wait start, and no Serve event comes from the thread.
func TestLaggingThread(t *testing.T) {
	dir := fixtures.Require(t)
	tr := open(t, trace.Options{ServingFrom: []uint32{unix.SYS_EPOLL_WAIT}})
	events := run(t, tr, []string{filepath.Join(dir, fixtures.Lagging)}, nil)
	want := map[uint32]struct {
		serving, thread bool
	}{
		unix.SYS_GETPRIORITY: {serving: true, thread: true},
		unix.SYS_GETPGID:     {serving: false, thread: false},
		unix.SYS_EPOLL_WAIT:  {serving: true, thread: false},
	}
	seen := map[uint32]bool{}
	for _, s := range syscalls(events) {
		w, ok := want[s.Nr]
		if !ok {
			continue
		}
		seen[s.Nr] = true
		if s.Serving != w.serving || (s.TID != s.TGID) != w.thread {
			t.Errorf("call %d by thread %d of process %d: serving %t, want %t (from a thread other than the main one: %t)", s.Nr, s.TID, s.TGID, s.Serving, w.serving, w.thread)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("saw calls %v of %d", seen, len(want))
	}
	for _, ev := range events {
		if s, ok := ev.(*trace.Serve); ok && (s.Born || s.TGID != tgidOf(events)) {
			t.Errorf("serve event %+v", s)
		}
	}
}

// tgidOf is the process of the first call among events.
func tgidOf(events []any) int {
	if calls := syscalls(events); len(calls) > 0 {
		return calls[0].TGID
	}
	return 0
}

// TestPhases runs phases with epoll_wait starting the serving phase: each
// process serves from its own first epoll_wait (that call included), or
// from its birth when a serving process forked it; every call carries its
// process's phase at that moment. Without ServingFrom no call serves.
func TestPhases(t *testing.T) {
	dir := fixtures.Require(t)
	args := []string{filepath.Join(dir, fixtures.Phases), "", "3"}
	t.Run("phases", func(t *testing.T) {
		tr := open(t, trace.Options{ServingFrom: []uint32{unix.SYS_EPOLL_WAIT}})
		args[1] = t.TempDir()
		events := run(t, tr, args, nil)
		born := map[int]bool{}
		for _, ev := range events {
			if s, ok := ev.(*trace.Serve); ok {
				if _, twice := born[s.TGID]; twice {
					t.Errorf("process %d started serving twice", s.TGID)
				}
				born[s.TGID] = s.Born
			}
		}
		// Each process's calls, and the phase of each.
		calls := map[int][]string{}
		for _, s := range syscalls(events) {
			calls[s.TGID] = append(calls[s.TGID], fmt.Sprintf("%d:%v", s.Nr, s.Serving))
		}
		starting := func(nr int) string { return fmt.Sprintf("%d:false", nr) }
		serving := func(nr int) string { return fmt.Sprintf("%d:true", nr) }
		var parent, early, late int
		for tgid, cs := range calls {
			switch {
			case slices.Contains(cs, starting(unix.SYS_MKDIR)):
				parent = tgid
			case slices.Contains(cs, starting(unix.SYS_GETUID)):
				early = tgid
			case slices.Contains(cs, serving(unix.SYS_GETSID)):
				late = tgid
			}
		}
		if parent == 0 || early == 0 || late == 0 || len(calls) != 3 {
			t.Fatalf("processes %v: want the parent's mkdir and early's getuid before serving, late's getsid serving", calls)
		}
		if want := map[int]bool{parent: false, early: false, late: true}; !maps.Equal(born, want) {
			t.Errorf("serve events (process: born) %v, want %v", born, want)
		}
		for tgid, cs := range calls {
			// Starting calls, then serving ones from the first
			// epoll_wait on, or from birth for late.
			first := slices.IndexFunc(cs, func(c string) bool { return strings.HasSuffix(c, ":true") })
			if tgid != late && (first < 0 || cs[first] != serving(unix.SYS_EPOLL_WAIT)) || tgid == late && first != 0 {
				t.Errorf("process %d: calls %v start serving at %d", tgid, cs, first)
			}
			if first >= 0 && slices.ContainsFunc(cs[first:], func(c string) bool { return strings.HasSuffix(c, ":false") }) {
				t.Errorf("process %d: calls %v stop serving", tgid, cs)
			}
		}
	})
	t.Run("no phases", func(t *testing.T) {
		tr := open(t, trace.Options{})
		args[1] = t.TempDir()
		for _, ev := range run(t, tr, args, nil) {
			if s, ok := ev.(*trace.Syscall); ok && s.Serving {
				t.Errorf("call %d of process %d serving without phases", s.Nr, s.TGID)
			}
			if _, ok := ev.(*trace.Serve); ok {
				t.Errorf("serve event without phases: %+v", ev)
			}
		}
	})
}
