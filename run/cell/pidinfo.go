package cell

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A new process costs the supervisor its thread group and its parent
// before its first call is decided. The kernel tells both through a
// pidfd (PIDFD_GET_INFO, Linux 6.13) in two system calls; the fallback,
// /proc/ID/status, makes the kernel print some fifty fields, three
// times slower, and took a tenth of every exec's supervised time.

// pidfdInfo is the kernel's struct pidfd_info as Linux 6.13 defines it
// (PIDFD_INFO_SIZE_VER0): later kernels take this size too.
type pidfdInfo struct {
	mask, cgroupID                                             uint64
	pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid uint32
	fsgid, _                                                   uint32
}

const (
	pidfdThread  = unix.O_EXCL // PIDFD_THREAD, Linux 6.9
	pidfdInfoPid = 1 << 0      // PIDFD_INFO_PID
	// pidfdGetInfo is _IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info).
	pidfdGetInfo = 3<<30 | uint(unsafe.Sizeof(pidfdInfo{}))<<16 | 0xff<<8 | 11
)

// taskInfo returns the thread group and the parent process of task id.
func taskInfo(id int) (tgid, ppid int, err error) {
	if tgid, ppid, ok := pidfdTaskInfo(id); ok {
		return tgid, ppid, nil
	}
	return statusTaskInfo(id)
}

// pidfdTaskInfo asks the kernel through a pidfd of task id; ok is false
// where the kernel cannot say (an older one, a task gone).
func pidfdTaskInfo(id int) (tgid, ppid int, ok bool) {
	fd, err := unix.PidfdOpen(id, pidfdThread)
	if err != nil {
		return 0, 0, false
	}
	defer unix.Close(fd)
	info := pidfdInfo{mask: pidfdInfoPid}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(pidfdGetInfo), uintptr(unsafe.Pointer(&info))); errno != 0 {
		return 0, 0, false
	}
	return int(info.tgid), int(info.ppid), info.mask&pidfdInfoPid != 0 && info.pid == uint32(id)
}

// statusTaskInfo reads /proc/ID/status.
func statusTaskInfo(id int) (tgid, ppid int, err error) {
	b, err := readAll(fmt.Sprintf("/proc/%d/status", id))
	if err != nil {
		return 0, 0, fmt.Errorf("cell: %w", err)
	}
	tgid, ppid = -1, -1
	for line := range strings.Lines(string(b)) {
		key, v, _ := strings.Cut(line, ":")
		switch key {
		case "Tgid":
			tgid, err = strconv.Atoi(strings.TrimSpace(v))
		case "PPid":
			ppid, err = strconv.Atoi(strings.TrimSpace(v))
		}
		if err != nil {
			return 0, 0, fmt.Errorf("cell: /proc/%d/status: %w", id, err)
		}
	}
	if tgid < 0 || ppid < 0 {
		return 0, 0, fmt.Errorf("cell: /proc/%d/status has no Tgid or PPid", id)
	}
	return tgid, ppid, nil
}

// tgidOf is the thread group of task tid.
func tgidOf(tid int) (int, error) {
	tgid, _, err := taskInfo(tid)
	return tgid, err
}

// parentOf is the parent of process pid.
func parentOf(pid int) (int, error) {
	_, ppid, err := taskInfo(pid)
	return ppid, err
}
