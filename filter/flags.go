package filter

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Flags modify how Install attaches a program: the kernel's
// SECCOMP_FILTER_FLAG_* values.
type Flags uint

const (
	// FlagTSync attaches the program to every thread of the process, not
	// just to the calling one.
	FlagTSync Flags = unix.SECCOMP_FILTER_FLAG_TSYNC
	// FlagLog logs every action but ALLOW, as far as the
	// kernel.seccomp.actions_logged sysctl lets it.
	FlagLog Flags = unix.SECCOMP_FILTER_FLAG_LOG
	// FlagSpecAllow keeps the kernel from enabling the Speculative Store
	// Bypass mitigation for the process.
	FlagSpecAllow Flags = unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW
	// FlagNewListener makes Install return a file descriptor on which a
	// supervisor receives the calls the program answers with
	// SECCOMP_RET_USER_NOTIF.
	FlagNewListener Flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	// FlagTSyncESRCH makes a failed FlagTSync synchronization fail with
	// ESRCH instead of returning the id of the thread at fault, which would
	// be indistinguishable from a listener descriptor.
	FlagTSyncESRCH Flags = unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH
	// FlagWaitKillableRecv lets only fatal signals interrupt a task whose
	// notification a supervisor has received.
	FlagWaitKillableRecv Flags = unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
)

var flagNames = []struct {
	flag Flags
	name string
}{
	{FlagTSync, "TSYNC"},
	{FlagLog, "LOG"},
	{FlagSpecAllow, "SPEC_ALLOW"},
	{FlagNewListener, "NEW_LISTENER"},
	{FlagTSyncESRCH, "TSYNC_ESRCH"},
	{FlagWaitKillableRecv, "WAIT_KILLABLE_RECV"},
}

// String lists the flags set, as in "TSYNC|LOG", or says "0"; bits without
// a name appear in hexadecimal.
func (f Flags) String() string {
	var names []string
	for _, fn := range flagNames {
		if f&fn.flag != 0 {
			names = append(names, fn.name)
			f &^= fn.flag
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint(f)))
	}
	if len(names) == 0 {
		return "0"
	}
	return strings.Join(names, "|")
}

// check rejects the combinations the kernel refuses, with the reason the
// kernel's bare EINVAL leaves out.
func (f Flags) check() error {
	if f&FlagNewListener != 0 && f&FlagTSync != 0 && f&FlagTSyncESRCH == 0 {
		return fmt.Errorf("filter: flags %s: NEW_LISTENER with TSYNC needs TSYNC_ESRCH, or a listener and the id of an unsynchronized thread would look alike: %w", f, unix.EINVAL)
	}
	if f&FlagWaitKillableRecv != 0 && f&FlagNewListener == 0 {
		return fmt.Errorf("filter: flags %s: WAIT_KILLABLE_RECV needs NEW_LISTENER: %w", f, unix.EINVAL)
	}
	return nil
}
