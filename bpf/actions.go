package bpf

import (
	"fmt"
	"strconv"
	"strings"
)

// Return values of seccomp filters (SECCOMP_RET_* in linux/seccomp.h): an
// action in the high 16 bits and its data in the low 16 bits.
const (
	retKillProcess = 0x80000000
	retKillThread  = 0x00000000
	retTrap        = 0x00030000
	retErrno       = 0x00050000
	retUserNotif   = 0x7fc00000
	retTrace       = 0x7ff00000
	retLog         = 0x7ffc0000
	retAllow       = 0x7fff0000

	retActionMask = 0xffff0000
	retDataMask   = 0x0000ffff
)

// action names a SECCOMP_RET_* action for the disassembler.
type action struct {
	name string
	ret  uint32
	// data is set for actions whose data is customarily written even when
	// zero, as in ERRNO(0).
	data bool
}

var actions = []action{
	{"KILL_PROCESS", retKillProcess, false},
	{"KILL_THREAD", retKillThread, false},
	{"TRAP", retTrap, true},
	{"ERRNO", retErrno, true},
	{"USER_NOTIF", retUserNotif, false},
	{"TRACE", retTrace, true},
	{"LOG", retLog, false},
	{"ALLOW", retAllow, false},
}

// formatRet renders a constant return value as its action, e.g. ALLOW or
// ERRNO(1), or as a number when the action is unknown.
func formatRet(k uint32) string {
	for _, a := range actions {
		if k&retActionMask != a.ret {
			continue
		}
		data := k & retDataMask
		if data == 0 && !a.data {
			return a.name
		}
		return fmt.Sprintf("%s(%d)", a.name, data)
	}
	return fmt.Sprintf("#%#x", k)
}

// parseRet reads what formatRet writes for an action: NAME or NAME(data).
func parseRet(s string) (uint32, bool) {
	name, data, hasData := strings.Cut(s, "(")
	for _, a := range actions {
		if a.name != name {
			continue
		}
		if !hasData {
			return a.ret, true
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(data, ")"), 0, 16)
		if err != nil || !strings.HasSuffix(data, ")") {
			return 0, false
		}
		return a.ret | uint32(n), true
	}
	return 0, false
}
