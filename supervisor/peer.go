package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the process that
// connected, taken when it connected.
const soPeerPidfd = 77

// peer is the process at the other end of a program's connection, as
// the kernel names it.
type peer struct {
	pid       int
	namespace uint64
	cgroups   []string
	// root is a descriptor of its root directory, which names the same
	// directory whatever becomes of the process.
	root int
}

// identify finds who connected to conn: the process the socket's peer
// credentials give, its PID namespace, its cgroups and its root. With a
// pidfd taken at connect time, what was read is checked to belong to
// that very process (it has not exited, so its pid names no other);
// without one (before Linux 6.5), a pidfd taken now bounds the race to
// the time between the connection and this call.
func identify(conn *net.UnixConn) (*peer, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	pidfd, credErr, pidfdErr := -1, error(nil), error(nil)
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		pidfd, pidfdErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd)
	}); err != nil {
		return nil, err
	}
	if credErr != nil {
		return nil, fmt.Errorf("peer credentials: %w", credErr)
	}
	pid := int(cred.Pid)
	if pidfdErr != nil {
		if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
	}
	defer unix.Close(pidfd)
	p := &peer{pid: pid, root: -1}
	if p.namespace, err = pidNamespace(pid); err == nil {
		if p.cgroups, err = cgroupLines(pid); err == nil {
			p.root, err = unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}
	}
	if err == nil {
		// Signal 0 sends nothing: it fails once the process is gone.
		err = unix.PidfdSendSignal(pidfd, 0, nil, 0)
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	return p, nil
}

func (p *peer) close() {
	if p.root >= 0 {
		unix.Close(p.root)
	}
}

// pidNamespace is the inode of the PID namespace of process pid.
func pidNamespace(pid int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", pid), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// cgroupLines are the lines of /proc/PID/cgroup, "ID:CONTROLLERS:PATH", one
// per hierarchy, with paths as the supervisor's cgroup namespace sees
// them.
func cgroupLines(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil, err
	}
	lines := strings.Fields(string(data))
	if len(lines) == 0 {
		return nil, errors.New("no cgroup")
	}
	return lines, nil
}

// holds says whether process p belongs to container c: the same PID
// namespace as its init process, and in every hierarchy a cgroup at or
// below the container's.
func (c *Container) holds(p *peer) bool {
	if c.Pid == 0 || p.namespace != c.Namespace {
		return false
	}
	mine := map[string]string{}
	for _, line := range p.cgroups {
		if h, path, ok := cutHierarchy(line); ok {
			mine[h] = path
		}
	}
	for _, line := range c.Cgroups {
		h, path, ok := cutHierarchy(line)
		if !ok {
			return false
		}
		got, ok := mine[h]
		if !ok || got != path && !strings.HasPrefix(got, strings.TrimSuffix(path, "/")+"/") {
			return false
		}
	}
	return true
}

// cutHierarchy splits a cgroup line into its hierarchy ("ID:CONTROLLERS")
// and its path, which may itself hold colons.
func cutHierarchy(line string) (hierarchy, path string, ok bool) {
	f := strings.SplitN(line, ":", 3)
	if len(f) != 3 {
		return "", "", false
	}
	return f[0] + ":" + f[1], f[2], true
}

// depth is how deep a container's cgroups lie: of two registered
// containers that hold a process, the deeper is its own.
func (c *Container) depth() int {
	n := 0
	for _, line := range c.Cgroups {
		n += strings.Count(line, "/")
	}
	return n
}
