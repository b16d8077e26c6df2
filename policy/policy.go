// Package policy is what the user writes: a default action, per-syscall
// rules with argument conditions, and per-library compartments. It reads
// syscell's TOML and OCI seccomp JSON, resolves names to numbers for one
// ABI, and decides verdicts straight from these semantics (the reference the
// compiler is tested against).
package policy

import (
	"fmt"

	"github.com/syscell/syscell/syscalls"
)

// Pos is where something was written, for error messages.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Policy is a parsed policy file.
type Policy struct {
	// Default applies to every syscall no rule matches.
	Default Action
	// BadArch applies to calls from an ABI the policy does not cover,
	// including x32 calls when x32 is not among Arches.
	BadArch Action
	// Arches the policy covers; empty means the compiler's choice.
	Arches []syscalls.Arch
	// Rules in file order.
	Rules []Rule
	// Compartments are per-library allowlists; their union is expected
	// to be allowed by Rules.
	Compartments []Compartment
	// IOURing names the io_uring operations a ring may make (package
	// iouring), for every ring the process sets up, whichever library
	// sets it up: a ring's operations are every library's. With
	// compartments, a ring may be set up only where the policy names
	// some.
	IOURing []string
	// ServingFrom names the calls that start a process's serving phase:
	// its first call of one of them (a serving loop's wait, as
	// epoll_wait or accept4), or its birth by fork from a process that
	// serves. Empty for a policy without phases.
	ServingFrom []string
	// VDSO names the functions the policy assumes the vDSO exports,
	// sorted: syscell infer reads this machine's vDSO, and where glibc
	// falls back to a system call only if the vDSO lacks a function
	// (time's IFUNC picks __vdso_time), it leaves that call out. run
	// checks the names against the running kernel's vDSO.
	VDSO []string
	// Source is the file the policy came from.
	Source string
}

// Phased says whether p narrows compartments once a process serves.
func (p *Policy) Phased() bool { return len(p.ServingFrom) > 0 }

// ServingCalls are the calls c may make once its process serves: all of
// its calls where p has no phases or c is not narrowed.
func (p *Policy) ServingCalls(c Compartment) []string {
	if !p.Phased() || c.Serving == nil {
		return c.Syscalls
	}
	return c.Serving
}

// Rule gives Action to the named syscalls when all Conds hold.
type Rule struct {
	Syscalls []string
	Action   Action
	Conds    []Cond
	Pos      Pos
}

// Compartment is one object's (library's or executable's) allowlist.
type Compartment struct {
	Name     string // human name, usually the path
	Path     string
	BuildID  string // hex GNU build-id, when known
	Syscalls []string
	// Exec names the programs this compartment may start with execve
	// with their own compartments: by their executable's compartment, or,
	// for an executable that makes no call of its own and so has none, by
	// its absolute path. Any other program it starts is bounded by this
	// compartment's syscalls.
	Exec []string
	// Reach, where known (syscell infer finds it), lists every call the
	// compartment's code can make, directly or through the system
	// runtime; nil where unknown, which counts as every call. A call
	// made from the runtime's code is decided in the kernel when every
	// compartment that can reach it may make it (or none may).
	Reach []string
	// Serving, in a policy with phases (ServingFrom), lists the calls
	// the compartment may still make once its process serves, a subset
	// of Syscalls; nil where it keeps all of them.
	Serving []string
	Pos     Pos
}
