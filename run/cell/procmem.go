package cell

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Writes through /proc/PID/mem ignore a page's protection, and mseal's
// (the kernel writes with FOLL_FORCE, as a debugger's breakpoints need),
// unless the kernel was built or booted to refuse them
// (proc_mem.force_override=never, or =ptrace, which allows only a
// process's tracer): a library that may open files could open its own
// process's mem file and rewrite another compartment's code in place,
// where the filter gives it that compartment's rights. ProcMemWrites
// tells whether this kernel lets them through; Options.DenyProcMem has
// the supervisor refuse every open of a mem file for writing.

// ProcMemWrites says whether a process can write its own sealed,
// read-only memory through /proc/self/mem on this kernel, found by
// trying it on a page of syscell's own, and why, as far as the kernel
// says: its boot parameter proc_mem.force_override, or its default.
var ProcMemWrites = sync.OnceValues(func() (bool, string) {
	why := "by the kernel's default, CONFIG_PROC_MEM_*"
	if cmdline, err := os.ReadFile("/proc/cmdline"); err == nil {
		for _, f := range strings.Fields(string(cmdline)) {
			if strings.HasPrefix(f, "proc_mem.force_override=") {
				why = "by its boot parameter " + f
			}
		}
	}
	return writesSealed(), why
})

// writesSealed writes a byte into a sealed read-only page of syscell's
// own through /proc/self/mem. The page stays: sealed, it cannot be
// unmapped.
func writesSealed() bool {
	page, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false
	}
	if unix.Mprotect(page, unix.PROT_READ) != nil {
		return false
	}
	unix.Syscall(unix.SYS_MSEAL, uintptr(unsafe.Pointer(&page[0])), pageSize, 0)
	f, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	n, err := f.WriteAt([]byte{1}, int64(uintptr(unsafe.Pointer(&page[0]))))
	return err == nil && n == 1 && page[0] == 1
}

// ProcMemExposed says whether p lets some code open files for writing, a
// process's mem file among them.
func ProcMemExposed(p *policy.Policy) bool {
	t := p.Resolve([]syscalls.Arch{syscalls.X86_64}).Tables[0]
	for nr := range openCalls {
		if mayRun(t, nr) {
			return true
		}
	}
	return false
}

// openCalls are the calls that open a file by path, and the arguments
// that hold the directory the path is relative to (-1: the working
// directory), the path, and the flags (-1: in struct open_how, which
// the argument after the path points to; creat's are O_WRONLY).
var openCalls = map[uint32]struct{ dir, path, flags int }{
	unix.SYS_OPEN:    {-1, 0, 1},
	unix.SYS_OPENAT:  {0, 1, 2},
	unix.SYS_OPENAT2: {0, 1, -1},
	unix.SYS_CREAT:   {-1, 0, -2},
}

// notifyWriteOpens returns a copy of t that notifies every open for
// writing the policy allows: the supervisor looks at what it opens.
// openat2's flags are in memory, beyond the filter: every openat2 is
// notified.
func notifyWriteOpens(t *policy.Table) *policy.Table {
	out := *t
	out.Syscalls = maps.Clone(t.Syscalls)
	notified := policy.Action{Kind: policy.UserNotify}
	for nr, c := range openCalls {
		if !mayRun(t, nr) {
			continue
		}
		bs := out.Syscalls[nr]
		if c.flags < 0 {
			out.Syscalls[nr] = append(bs[:len(bs):len(bs)], policy.Branch{Action: notified})
			continue
		}
		for _, mode := range []uint64{unix.O_WRONLY, unix.O_RDWR} {
			cond := policy.Cond{Arg: uint8(c.flags), Op: policy.MaskedEq, Mask: unix.O_ACCMODE, Value: mode}
			bs = append(bs[:len(bs):len(bs)], policy.Branch{Action: notified, Conds: []policy.Cond{cond}})
		}
		out.Syscalls[nr] = bs
	}
	return &out
}

// mayRun says whether t lets call nr run for some arguments.
func mayRun(t *policy.Table, nr uint32) bool {
	runs := func(a policy.Action) bool { return a.Kind == policy.Allow || a.Kind == policy.Log }
	if _, named := t.Syscalls[nr]; !named {
		return runs(t.Default)
	}
	for _, b := range t.Syscalls[nr] {
		if runs(b.Action) {
			return true
		}
	}
	return runs(t.Default)
}

// errProcMem is why an open is refused.
var errProcMem = errors.New("it opens a process's /proc/PID/mem for writing, which --deny-proc-mem refuses")

// refuseProcMem denies n, counting it, if it opens a process's mem file
// for writing, and says whether it did.
func (s *supervisor) refuseProcMem(n *notify.Notification, w *worker) (bool, error) {
	if !s.denyProcMem || !opensProcMem(n) {
		return false, nil
	}
	o := s.filterOwner(n, w)
	err := s.l.Respond(notify.Response{ID: n.ID, Errno: unix.EPERM})
	if errors.Is(err, notify.ErrNotPending) {
		return true, nil
	}
	s.mu.Lock()
	s.denied.count(o.label, n, policy.ActEPERM, errProcMem)
	s.logDenial(n, o.label, policy.ActEPERM)
	s.mu.Unlock()
	return true, err
}

// isOpenCall says whether n opens a file by path, which may be a mem
// file.
func isOpenCall(n *notify.Notification) bool {
	_, ok := openCalls[n.Data.Nr]
	return ok && n.Data.Arch == syscalls.AuditArchX86_64
}

// opensProcMem says whether n opens, for writing, a file that is a
// process's mem file, or may be: a path whose resolution takes a magic
// link of /proc (fd/N, cwd, root, map_files/...), which may reopen a mem
// file opened for reading, or that the supervisor cannot read.
func opensProcMem(n *notify.Notification) bool {
	c, ok := openCalls[n.Data.Nr]
	if !ok || n.Data.Arch != syscalls.AuditArchX86_64 {
		return false
	}
	mem := attribute.ProcessMemory{Pid: int(n.Pid)}
	var flags uint64
	switch c.flags {
	case -1:
		var how [8]byte
		if mem.Read(n.Data.Args[c.path+1], how[:]) != nil {
			return true
		}
		flags = binary.LittleEndian.Uint64(how[:])
	case -2:
		flags = unix.O_WRONLY
	default:
		flags = n.Data.Args[c.flags]
	}
	if mode := flags & unix.O_ACCMODE; mode != unix.O_WRONLY && mode != unix.O_RDWR || flags&unix.O_PATH != 0 {
		return false
	}
	path, err := readString(mem, n.Data.Args[c.path], unix.PathMax)
	if err != nil {
		return true
	}
	dir := -1
	if c.dir >= 0 {
		dir = int(int32(n.Data.Args[c.dir]))
	}
	isMem, err := resolvesToProcMem(int(n.Pid), dir, path)
	return isMem || err != nil
}

// resolvesToProcMem resolves path as process pid would, relative to its
// root if absolute, else to its descriptor dir or, for AT_FDCWD (or -1),
// its working directory, following symbolic links but no magic link,
// and says whether it names a process's mem file. /proc/self leads to
// syscell's own process here, whose mem file is one all the same. A
// path that does not lead to a file names none; one whose resolution
// needs a magic link is an error.
func resolvesToProcMem(pid, dir int, path string) (bool, error) {
	base, resolve := fmt.Sprintf("/proc/%d/cwd", pid), uint64(unix.RESOLVE_NO_MAGICLINKS)
	switch {
	case strings.HasPrefix(path, "/"):
		base, resolve = fmt.Sprintf("/proc/%d/root", pid), unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_MAGICLINKS
	case dir != unix.AT_FDCWD && dir != -1:
		base = fmt.Sprintf("/proc/%d/fd/%d", pid, dir)
	}
	bfd, err := unix.Open(base, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("cell: %s: %w", base, err)
	}
	defer unix.Close(bfd)
	fd, err := unix.Openat2(bfd, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolve})
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EACCES):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cell: resolve %q for process %d: %w", path, pid, err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false, fmt.Errorf("cell: %w", err)
	}
	if st.Type != unix.PROC_SUPER_MAGIC {
		return false, nil
	}
	name, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	return err != nil || filepath.Base(name) == "mem", nil
}
