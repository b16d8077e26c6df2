package ociruntime

import (
	"fmt"
	"slices"
	"strings"
)

// The delegate's global flags that take a value, as runc and crun name
// them; any other global flag stands alone, or carries its value after
// "=".
var globalValueFlags = []string{"root", "log", "log-format", "log-level", "criu", "rootless", "cgroup-manager"}

// syscell's own global flags, which the delegate never sees.
const (
	flagDelegate  = "syscell-delegate"
	flagDir       = "syscell-dir"
	flagPolicyDir = "syscell-policy-dir"
	flagRecordDir = "syscell-record-dir"
)

var ownFlags = []string{flagDelegate, flagDir, flagPolicyDir, flagRecordDir}

// invocation is a command line of the OCI runtime interface.
type invocation struct {
	// globals are the delegate's global flags, as given; own are
	// syscell's.
	globals []string
	own     map[string]string
	command string
	args    []string
}

// parseInvocation splits a command line into global flags, the command
// and its arguments.
func parseInvocation(args []string) (*invocation, error) {
	inv := &invocation{own: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			inv.command, inv.args = a, args[i+1:]
			return inv, nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		own := slices.Contains(ownFlags, name)
		takes := own || slices.Contains(globalValueFlags, name)
		if takes && !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			value = args[i]
			if !own {
				inv.globals = append(inv.globals, a, value)
				continue
			}
		}
		if own {
			inv.own[name] = value
			continue
		}
		inv.globals = append(inv.globals, a)
	}
	return inv, nil
}

// global is the value of the delegate's global flag name, if given.
func (inv *invocation) global(name string) string {
	for i := 0; i < len(inv.globals); i++ {
		n, v, ok := strings.Cut(strings.TrimLeft(inv.globals[i], "-"), "=")
		if n != name {
			continue
		}
		if !ok && i+1 < len(inv.globals) {
			v = inv.globals[i+1]
		}
		return v
	}
	return ""
}

// commandFlags are a command's flags that take a value (long names, and
// short ones of one letter); its other flags stand alone.
type commandFlags []string

var (
	createFlags = commandFlags{"bundle", "b", "console-socket", "pid-file", "preserve-fds", "config", "f"}
	runFlags    = createFlags
	execFlags   = commandFlags{"console-socket", "cwd", "env", "e", "user", "u", "additional-gids", "g",
		"process", "p", "pid-file", "process-label", "apparmor", "cap", "c", "preserve-fds", "cgroup"}
	plainFlags = commandFlags{}
)

// commandLine is a command's arguments: its flags by name (the last
// value given), and its positional arguments, the container id first.
type commandLine struct {
	flags      map[string]string
	positional []string
}

// parseCommand reads a command's arguments. Flags come before the
// container id, as runc and crun take them; "--" ends them.
func parseCommand(args []string, valued commandFlags) (*commandLine, error) {
	cl := &commandLine{flags: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			cl.positional = append(cl.positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			cl.positional = append(cl.positional, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if slices.Contains(valued, name) && !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		cl.flags[name] = value
	}
	return cl, nil
}

// value is the value of the flag with any of names.
func (cl *commandLine) value(names ...string) string {
	for _, n := range names {
		if v, ok := cl.flags[n]; ok {
			return v
		}
	}
	return ""
}

// has says whether a flag with any of names was given.
func (cl *commandLine) has(names ...string) bool {
	for _, n := range names {
		if _, ok := cl.flags[n]; ok {
			return true
		}
	}
	return false
}

// id is the container id: the first positional argument.
func (cl *commandLine) id() (string, error) {
	if len(cl.positional) == 0 {
		return "", fmt.Errorf("no container id")
	}
	return cl.positional[0], nil
}
