package cell

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// The filter outlives execve with the layout it was compiled for. An
// image the audit library is loaded into reserves that layout's ranges
// and stub window (audit/inherit.c); an image started without it (an
// environment that dropped LD_AUDIT or SYSCELL_CELL, or a statically
// linked program) could put its own code where a compartment's was, and
// have the filter take its calls for that compartment's. So every execve
// is notified, and one that would start such an image fails with EPERM.

// execCalls are the calls that start a new image, notified whatever the
// policy says of them.
var execCalls = []uint32{unix.SYS_EXECVE, unix.SYS_EXECVEAT}

// envpArg is the argument of each exec call that holds its environment.
var envpArg = map[uint32]int{unix.SYS_EXECVE: 2, unix.SYS_EXECVEAT: 3}

// How much of an exec's environment is read: more variables than this,
// or a longer LD_AUDIT, and the exec is refused.
const (
	maxEnv    = 1 << 14
	maxEnvVar = 4096
)

// errStaleLayout is why an exec without the audit library is refused.
var errStaleLayout = errors.New("its environment lacks LD_AUDIT or " + inheritEnv + ", which keep the new image out of the compartments' code ranges")

// notifyExec returns a copy of t that notifies every exec call.
func notifyExec(t *policy.Table) *policy.Table {
	out := *t
	out.Syscalls = make(map[uint32][]policy.Branch, len(t.Syscalls)+len(execCalls))
	for nr, bs := range t.Syscalls {
		out.Syscalls[nr] = bs
	}
	for _, nr := range execCalls {
		out.Syscalls[nr] = []policy.Branch{{Action: policy.Action{Kind: policy.UserNotify}}}
	}
	return &out
}

// isExec says whether n starts a new image.
func isExec(n *notify.Notification) bool {
	return n.Data.Arch == syscalls.AuditArchX86_64 && slices.Contains(execCalls, n.Data.Nr)
}

// checkExec decides an exec the policy allows: it runs if the image it
// starts will load the audit library with the inherited layout
// (checkImage). An environment that dropped syscell's variables (env -i,
// env -u LD_AUDIT) gets them back: the call is withdrawn and made again
// with them (repairEnv), and errRetry is returned. An environment the
// supervisor cannot read fails with EFAULT, as the kernel would fail it;
// anything else with EPERM, and why is returned. An allowed exec's
// program is returned too, "" where the kernel will fail the exec.
func (s *supervisor) checkExec(n *notify.Notification) (policy.Action, string, error) {
	program, err := checkImage(n, s.library)
	switch {
	case err == nil:
		return policy.ActAllow, program, nil
	case errors.Is(err, errFault):
		return policy.Action{Kind: policy.Errno, Data: uint16(unix.EFAULT)}, "", err
	case errors.Is(err, errStaleLayout) && s.inherit != "":
		if rerr := s.repairEnv(n); rerr == nil {
			return policy.ActAllow, "", errRetry
		} else {
			err = fmt.Errorf("%w, and could not be given them: %w", err, rerr)
		}
	}
	return policy.ActEPERM, "", err
}

// errFault reports memory of the caller the supervisor cannot read.
var errFault = errors.New("bad address")

// repairEnv has the notified exec made again with syscell's variables in
// its environment (the tracer rewrites its environment pointer).
func (s *supervisor) repairEnv(n *notify.Notification) error {
	env, err := readEnv(n)
	if err != nil {
		return err
	}
	env = programEnv(env, s.library, "", 0)
	for i, kv := range env {
		if strings.HasPrefix(kv, inheritEnv+"=") {
			env[i] = inheritEnv + "=" + s.inherit
		}
	}
	return s.tracer.do(func() error { return setExecEnv(n.Pid, envpArg[n.Data.Nr], env) })
}

// checkImage checks that the image the notified exec starts will load the
// audit library library with the inherited layout: its environment must
// name both, and the program must be one the loader loads it into (not
// statically linked). The caller can change the arguments after the
// check, as it can any argument a supervisor reads, or the file; the
// check is against programs that drop the variables or execute a static
// program, not against code racing the supervisor. It returns the
// program the exec loads (checkExecuted), "" where the kernel will fail
// the exec itself.
func checkImage(n *notify.Notification, library string) (string, error) {
	if err := checkExecEnv(n, library); err != nil {
		return "", err
	}
	root, path, err := execTarget(n)
	if err != nil {
		return "", nil
	}
	program, err := checkExecuted(root, path)
	if errors.Is(err, ErrNotAuditable) {
		return "", err
	}
	return program, nil
}

// execTarget is the file the notified exec names, as the supervisor can
// open it: under the caller's root, relative to its working directory or
// to the directory descriptor execveat names.
func execTarget(n *notify.Notification) (root, path string, err error) {
	proc := fmt.Sprintf("/proc/%d/", n.Pid)
	dir, pathArg := proc+"cwd", n.Data.Args[0]
	if n.Data.Nr == unix.SYS_EXECVEAT {
		pathArg = n.Data.Args[1]
		if fd := int32(n.Data.Args[0]); fd != unix.AT_FDCWD {
			dir = proc + "fd/" + strconv.Itoa(int(fd))
		}
	}
	name, err := readString(attribute.ProcessMemory{Pid: n.Pid}, pathArg, unix.PathMax)
	switch {
	case err != nil:
		return "", "", err
	case name == "":
		return proc + "root", dir, nil // execveat with AT_EMPTY_PATH
	case strings.HasPrefix(name, "/"):
		return proc + "root", proc + "root" + name, nil
	}
	// Not filepath.Join: ".." must be resolved by the kernel, past the
	// magic link, not lexically into /proc.
	return proc + "root", dir + "/" + name, nil
}

// checkExecEnv reads the environment the notified exec passes and checks
// that it loads the audit library library and carries the inherited
// layout.
func checkExecEnv(n *notify.Notification, library string) error {
	env, err := readEnv(n)
	if err != nil {
		return err
	}
	audit, layout := false, false
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "LD_AUDIT":
			audit = slices.Contains(strings.Split(value, ":"), library)
		case inheritEnv:
			layout = true
		}
	}
	if !audit || !layout {
		return errStaleLayout
	}
	return nil
}

// readEnv reads the environment the notified exec passes: none for a
// null pointer, as the kernel takes it. An exec is notified with its
// environment unread, and a shell's carries dozens of variables: the
// pointers and the strings are read a batch at a time (readWords,
// readStrings), not a word and a string a system call.
func readEnv(n *notify.Notification) ([]string, error) {
	envp := n.Data.Args[envpArg[n.Data.Nr]]
	if envp == 0 {
		return nil, nil
	}
	ptrs, err := readWords(n.Pid, envp, maxEnv)
	if err != nil {
		return nil, fmt.Errorf("read the environment: %w: %w", errFault, err)
	}
	env, err := readStrings(n.Pid, ptrs, maxEnvVar)
	if err != nil {
		return nil, fmt.Errorf("read the environment: %w: %w", errFault, err)
	}
	return env, nil
}

// readString reads the NUL-terminated string at at, up to max bytes.
// A string longer than its first chunk (syscell's own variables in an
// exec's environment) is read to the end of each page at a time.
func readString(mem attribute.ProcessMemory, at uint64, max int) (string, error) {
	var buf []byte
	for size := 256; len(buf) < max; size = 4096 {
		// A read must not cross into a page that may be unmapped.
		chunk := make([]byte, min(size, max-len(buf), 4096-int(at%4096)))
		if err := mem.Read(at, chunk); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			return string(append(buf, chunk[:i]...)), nil
		}
		buf = append(buf, chunk...)
		at += uint64(len(chunk))
	}
	return string(buf), nil
}
