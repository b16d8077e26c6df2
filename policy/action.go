package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// ActionKind is what the kernel does with a call.
type ActionKind uint8

// Action kinds, most restrictive first.
const (
	KillProcess ActionKind = iota
	KillThread
	Trap
	Errno
	UserNotify
	Trace
	Log
	Allow
)

// SECCOMP_RET_* values.
const (
	RetKillProcess = 0x80000000
	RetKillThread  = 0x00000000
	RetTrap        = 0x00030000
	RetErrno       = 0x00050000
	RetUserNotif   = 0x7fc00000
	RetTrace       = 0x7ff00000
	RetLog         = 0x7ffc0000
	RetAllow       = 0x7fff0000
	RetDataMask    = 0x0000ffff
)

// Action is an action kind with its data (the errno, or the tracer's value).
type Action struct {
	Kind ActionKind
	Data uint16
}

// Common actions.
var (
	ActAllow       = Action{Kind: Allow}
	ActKillProcess = Action{Kind: KillProcess}
	ActEPERM       = Action{Kind: Errno, Data: 1}
)

var kindNames = [...]string{
	KillProcess: "kill-process",
	KillThread:  "kill-thread",
	Trap:        "trap",
	Errno:       "errno",
	UserNotify:  "user-notify",
	Trace:       "trace",
	Log:         "log",
	Allow:       "allow",
}

var kindRets = [...]uint32{
	KillProcess: RetKillProcess,
	KillThread:  RetKillThread,
	Trap:        RetTrap,
	Errno:       RetErrno,
	UserNotify:  RetUserNotif,
	Trace:       RetTrace,
	Log:         RetLog,
	Allow:       RetAllow,
}

// Ret is the filter's return value for a.
func (a Action) Ret() uint32 { return kindRets[a.Kind] | uint32(a.Data) }

// Precedes reports whether a wins over b when both match the same call: the
// kernel's order of precedence between filters, applied between rules too.
func (a Action) Precedes(b Action) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Data < b.Data
}

func (a Action) String() string {
	switch a.Kind {
	case Errno, Trace:
		return fmt.Sprintf("%s(%d)", kindNames[a.Kind], a.Data)
	}
	return kindNames[a.Kind]
}

// MarshalText writes the form ParseAction reads.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action such as "allow" or "errno(1)".
func (a *Action) UnmarshalText(b []byte) error {
	act, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = act
	return nil
}

// ParseAction reads "allow", "log", "trap", "kill-process", "kill-thread",
// "user-notify", "errno(N)" (N a number or a name such as EPERM) and
// "trace(N)". "kill" means kill-process.
func ParseAction(s string) (Action, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), "(")
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return Action{}, fmt.Errorf("action %q: missing )", s)
		}
		arg = strings.TrimSuffix(arg, ")")
	}
	if name == "kill" {
		name = "kill-process"
	}
	for k, n := range kindNames {
		if n != name {
			continue
		}
		kind := ActionKind(k)
		if kind != Errno && kind != Trace {
			if hasArg {
				return Action{}, fmt.Errorf("action %q takes no argument", name)
			}
			return Action{Kind: kind}, nil
		}
		if !hasArg {
			return Action{}, fmt.Errorf("action %q needs a value, as in %s(1)", name, name)
		}
		data, err := parseActionData(arg)
		if err != nil {
			return Action{}, fmt.Errorf("action %q: %w", s, err)
		}
		return Action{Kind: kind, Data: data}, nil
	}
	return Action{}, fmt.Errorf("unknown action %q (want allow, errno(N), kill-process, kill-thread, trap, log, trace(N) or user-notify)", s)
}

func parseActionData(s string) (uint16, error) {
	if n, ok := errnoByName[strings.ToUpper(s)]; ok {
		return n, nil
	}
	v, err := strconv.ParseUint(s, 0, 16)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number from 0 to 65535 or an errno name", s)
	}
	return uint16(v), nil
}

// ActionFromRet maps a filter return value back to an action.
func ActionFromRet(ret uint32) Action {
	for k := len(kindRets) - 1; k >= 0; k-- {
		base := kindRets[k]
		if k == int(KillThread) {
			continue
		}
		if ret&^RetDataMask == base {
			return Action{Kind: ActionKind(k), Data: uint16(ret & RetDataMask)}
		}
	}
	return Action{Kind: KillThread, Data: uint16(ret & RetDataMask)}
}
