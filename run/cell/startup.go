package cell

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// The filter is installed once the loader has started the first image,
// so that image's start-up calls precede it. An image an exec starts is
// loaded under the filter: its loader's calls (start-up calls: no
// compartment's, the rules' alone, as package record writes them) and
// the audit library's own must run until it is loaded, and no longer,
// or any library could forge a stack that looks like the loader's and
// make the rules' calls. So start-up is open for a process only from an
// exec the supervisor let run, once the kernel has really replaced the
// image (its auxiliary vector, which only an exec sets, changed), until
// the new image's audit library marks it loaded, at its first
// consistent state, before any constructor of the image runs.

// The mark: a call the audit library makes for the supervisor, an
// execveat the kernel would refuse (no descriptor, flags it does not
// define), which the filter notifies as it does every exec. Its flags
// say what it marks (audit/audit.h).
const (
	markFlags     = 0x5ce11000
	markLoaded    = markFlags | 1
	markBound     = markFlags | 2
	markInstalled = markFlags | 3
)

func isMark(n *notify.Notification) bool {
	return isExec(n) && n.Data.Nr == unix.SYS_EXECVEAT && int32(n.Data.Args[0]) == -1 && n.Data.Args[4]&^0xff == markFlags
}

// answerMark takes a mark: a loaded image's start-up is over, or the
// first image has installed its filter (and waits for the answer, as its
// helper hands the listener over, install.c); or, asked by the audit
// library of an image an exec started, the slot of the compartment that
// bounds the image (execs.go), plus one, 0 for none; or a process's
// first serving call (phases.go). Both a loaded and a
// filtered image's loader has still to unmap its cache.
func (s *supervisor) answerMark(n *notify.Notification) error {
	t, err := s.thread(n.Pid)
	var val int64
	if err == nil {
		switch n.Data.Args[4] {
		case markLoaded, markInstalled:
			s.mu.Lock()
			t.proc.start = imageStart{cacheMapped: true}
			s.mu.Unlock()
		case markBound:
			s.loading(t.proc)
			val = int64(s.ids.slot(s.boundOf(t.proc)) + 1)
			writeExecutable(n)
		case markServing:
			s.startServing(t.proc)
		}
	}
	return ignoreGone(s.l.Respond(notify.Response{ID: n.ID, Val: val}))
}

// writeExecutable writes, for a bound mark that asks for it, the path of
// the caller's executable where the mark's second and third arguments
// say, as the caller's own readlink of /proc/self/exe would read it:
// so the image's audit library need not ask the supervisor for that
// call too. Only a caller whose root is the supervisor's sees paths as
// the supervisor does; any other reads its own, and so does one the
// write fails for (the pages are not writable).
func writeExecutable(n *notify.Notification) {
	at, size := n.Data.Args[1], n.Data.Args[2]
	if at == 0 || size == 0 || !sameRoot(n.Pid) {
		return
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", n.Pid))
	if err != nil || uint64(len(exe)) >= size {
		return
	}
	b := append([]byte(exe), 0)
	local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
	remote := []unix.RemoteIovec{{Base: uintptr(at), Len: len(b)}}
	unix.ProcessVMWritev(n.Pid, local, remote, 0)
}

// sameRoot says whether process pid has the supervisor's root directory.
func sameRoot(pid int) bool {
	var theirs unix.Stat_t
	ours, err := ownRoot()
	if err != nil || unix.Stat(fmt.Sprintf("/proc/%d/root", pid), &theirs) != nil {
		return false
	}
	return theirs.Dev == ours.Dev && theirs.Ino == ours.Ino
}

// ownRoot is the supervisor's root directory, which it never changes,
// looked at once.
var ownRoot = sync.OnceValues(func() (unix.Stat_t, error) {
	var st unix.Stat_t
	return st, unix.Stat("/", &st)
})

// imageStart is where a process is in starting an image; the
// supervisor's mu guards it.
type imageStart struct {
	// execAuxv is the auxiliary vector of the image that made an exec
	// the supervisor let run, until the exec is seen to have happened.
	execAuxv []byte
	// bound is the compartment that is to bound the image the exec
	// starts, "" for none (execs.go).
	bound string
	// loading says the image an exec started is being loaded.
	loading bool
	// cacheMapped says the image is loaded and its loader has still to
	// unmap its cache (loaderCacheUnmap).
	cacheMapped bool
}

// auxv reads the auxiliary vector of process tgid: set by the kernel at
// each exec, and by nothing else (prctl(PR_SET_MM_AUXV) needs
// CAP_SYS_RESOURCE).
func auxv(tgid int) ([]byte, error) {
	b, err := readAll(fmt.Sprintf("/proc/%d/auxv", tgid))
	if err != nil {
		return nil, fmt.Errorf("cell: %w", err)
	}
	return b, nil
}

// execLetRun notes that the notified exec is about to run, and start an
// image bound by the compartment bound ("" for none).
func (s *supervisor) execLetRun(n *notify.Notification, bound string) {
	t, err := s.thread(n.Pid)
	if err != nil {
		return
	}
	t.proc.execs.Add(1)
	v, err := auxv(t.proc.tgid)
	if err != nil {
		return
	}
	s.mu.Lock()
	t.proc.start = imageStart{execAuxv: v, bound: bound}
	s.mu.Unlock()
}

// startingUp says whether p is loading an image an exec started, and n
// is a call its loader may make then: a start-up call the rules allow,
// or one the audit library makes for itself.
func (s *supervisor) startingUp(p *process, n *notify.Notification) bool {
	if p == nil || !s.loading(p) {
		return false
	}
	return auditorCalls[n.Data.Nr] || startUpCalls[n.Data.Nr] && s.spec.Union.Verdict(n.Data.Nr, n.Data.Args) == policy.ActAllow
}

// loadingCall says whether n is a start-up call of a process loading an
// image an exec started. Until the image is loaded, only the loader, the
// audit library and the code the loader runs while it relocates (IFUNC
// resolvers, an interposed malloc) run in it, as in the first image
// before the filter: so these calls need no unwind, which would read the
// process's mappings anew at every call while the loader changes them.
func (s *supervisor) loadingCall(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 || !startUpCalls[n.Data.Nr] && !auditorCalls[n.Data.Nr] {
		return false
	}
	t, err := s.thread(n.Pid)
	return err == nil && s.startingUp(t.proc, n)
}

// startUpCalls are the calls the dynamic loader makes while it loads an
// image (glibc 2.36's, and its libc's early initialisation): what
// start-up may do, whatever else the rules allow.
var startUpCalls = map[uint32]bool{
	unix.SYS_ACCESS: true, unix.SYS_ARCH_PRCTL: true, unix.SYS_BRK: true,
	unix.SYS_CLOSE: true, unix.SYS_FSTAT: true, unix.SYS_GETCWD: true,
	unix.SYS_GETRANDOM: true, unix.SYS_LSEEK: true, unix.SYS_MMAP: true,
	unix.SYS_MPROTECT: true, unix.SYS_MUNMAP: true, unix.SYS_NEWFSTATAT: true,
	unix.SYS_OPENAT: true, unix.SYS_PREAD64: true, unix.SYS_PRLIMIT64: true,
	unix.SYS_READ: true, unix.SYS_RSEQ: true, unix.SYS_SET_ROBUST_LIST: true,
	unix.SYS_SET_TID_ADDRESS: true, unix.SYS_STATFS: true, unix.SYS_UNAME: true,
}

// loading says whether p is loading an image an exec started.
func (s *supervisor) loading(p *process) bool {
	s.mu.Lock()
	st := p.start
	s.mu.Unlock()
	if st.loading || st.execAuxv == nil {
		return st.loading
	}
	v, err := auxv(p.tgid)
	if err != nil || bytes.Equal(v, st.execAuxv) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.start.execAuxv != nil {
		p.bound = p.start.bound
		p.start = imageStart{loading: true}
	}
	return p.start.loading
}

// auditorCalls are the calls the audit library makes for itself while an
// image loads, which no recording of the program shows: sealing its
// window and the runtime's code, and its executable's path.
var auditorCalls = map[uint32]bool{
	unix.SYS_MSEAL:    true,
	unix.SYS_READLINK: true,
}

// loaderCache is the file the dynamic loader maps to find libraries, and
// unmaps once the program is loaded, after the filter is in place.
const loaderCache = "/etc/ld.so.cache"

// loaderCacheUnmap says whether n is the first munmap of a process whose
// image has just installed its filter or, started by an exec, been marked
// loaded, and unmaps the loader's cache: its loader's next call,
// which would otherwise be attributed, reading the image's mappings and
// every object's unwind tables, at every start.
func (s *supervisor) loaderCacheUnmap(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 || n.Data.Nr != unix.SYS_MUNMAP {
		return false
	}
	t, err := s.thread(n.Pid)
	if err != nil {
		return false
	}
	s.mu.Lock()
	mapped := t.proc.start.cacheMapped
	t.proc.start.cacheMapped = false
	s.mu.Unlock()
	return mapped && unmapsLoaderCache(n)
}

// unmapsLoaderCache says whether n unmaps exactly a mapping of the
// loader's cache, which nothing but the loader needs.
func unmapsLoaderCache(n *notify.Notification) bool {
	if n.Data.Arch != syscalls.AuditArchX86_64 || n.Data.Nr != unix.SYS_MUNMAP {
		return false
	}
	start, size := n.Data.Args[0], n.Data.Args[1]
	end := start + (size+pageSize-1)&^(pageSize-1)
	if size == 0 || end < start {
		return false
	}
	m, ok, err := mappingAt(n.Pid, start)
	return err == nil && ok && m.start == start && m.end == end && m.name == loaderCache
}

const pageSize = 4096
