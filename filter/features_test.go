package filter_test

import (
	"errors"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/filter"
)

func TestActionAvailable(t *testing.T) {
	filtertest.RequireSeccomp(t)
	for _, ret := range []uint32{
		unix.SECCOMP_RET_KILL_PROCESS,
		unix.SECCOMP_RET_KILL_THREAD,
		unix.SECCOMP_RET_TRAP,
		unix.SECCOMP_RET_ERRNO | 1, // data is ignored
		unix.SECCOMP_RET_USER_NOTIF,
		unix.SECCOMP_RET_TRACE,
		unix.SECCOMP_RET_LOG,
		unix.SECCOMP_RET_ALLOW,
	} {
		err := filter.ActionAvailable(ret)
		if errors.Is(err, filter.ErrNotSupported) {
			t.Logf("SKIPPED %s: %v", filter.ActionName(ret), err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", filter.ActionName(ret), err)
		}
	}
	if err := filter.ActionAvailable(unix.SECCOMP_RET_ALLOW); err != nil {
		t.Skipf("SKIPPED the unknown action: this kernel cannot tell (%v)", err)
	}
	if err := filter.ActionAvailable(0x12340000); !errors.Is(err, filter.ErrNotSupported) {
		t.Errorf("unknown action: %v, want ErrNotSupported", err)
	}
}

func TestFlagsSupported(t *testing.T) {
	filtertest.RequireSeccomp(t)
	for _, flags := range []filter.Flags{
		0,
		filter.FlagTSync,
		filter.FlagLog,
		filter.FlagSpecAllow,
		filter.FlagNewListener,
		filter.FlagTSyncESRCH,
		filter.FlagNewListener | filter.FlagWaitKillableRecv,
	} {
		err := filter.FlagsSupported(flags)
		if errors.Is(err, filter.ErrNotSupported) {
			t.Logf("SKIPPED %s: %v", flags, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", flags, err)
		}
	}
	if err := filter.FlagsSupported(1 << 30); !errors.Is(err, filter.ErrNotSupported) {
		t.Errorf("unknown flag: %v, want ErrNotSupported", err)
	}
	err := filter.FlagsSupported(filter.FlagNewListener | filter.FlagTSync)
	if !errors.Is(err, unix.EINVAL) || errors.Is(err, filter.ErrNotSupported) {
		t.Errorf("NEW_LISTENER|TSYNC: %v, want EINVAL, which no kernel supports", err)
	}
}

func TestFlagsString(t *testing.T) {
	for flags, want := range map[filter.Flags]string{
		0:                                 "0",
		filter.FlagTSync | filter.FlagLog: "TSYNC|LOG",
		filter.FlagNewListener | 1<<12:    "NEW_LISTENER|0x1000",
		filter.FlagWaitKillableRecv:       "WAIT_KILLABLE_RECV",
		filter.FlagSpecAllow | filter.FlagTSyncESRCH: "SPEC_ALLOW|TSYNC_ESRCH",
	} {
		if got := flags.String(); got != want {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint(flags), got, want)
		}
	}
}

func TestActionName(t *testing.T) {
	for ret, want := range map[uint32]string{
		unix.SECCOMP_RET_ERRNO | 13:   "ERRNO(13)",
		unix.SECCOMP_RET_KILL_PROCESS: "KILL_PROCESS",
		unix.SECCOMP_RET_KILL_THREAD:  "KILL_THREAD",
		unix.SECCOMP_RET_TRACE | 2:    "TRACE(2)",
		unix.SECCOMP_RET_ALLOW:        "ALLOW",
		0x12340000:                    "0x12340000",
	} {
		if got := filter.ActionName(ret); got != want {
			t.Errorf("ActionName(%#x) = %q, want %q", ret, got, want)
		}
	}
}
