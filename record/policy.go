package record

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Policy returns the recording as a policy: calls no rule allows fail with
// EPERM; one rule allows the union of every compartment's calls (and of
// the calls that could not be attributed, which happened all the same,
// the loader's start-up calls and restart_syscall);
// each compartment lists its calls, and with phases those it made while
// serving. The options annotate each compartment's calls with their
// counts.
func (r *Recording) Policy() (*policy.Policy, policy.WriteOptions) {
	p := &policy.Policy{Default: policy.ActEPERM, BadArch: policy.ActKillProcess, Arches: r.arches()}
	if r.Phased() {
		p.ServingFrom = slices.Clone(r.ServingFrom)
	}
	p.VDSO = slices.Clone(r.VDSO)
	opts := policy.WriteOptions{Comments: map[string]map[string]string{}}
	for _, c := range r.Compartments {
		pc := policy.Compartment{
			Name: c.Name, Path: c.Path, BuildID: c.BuildID, Syscalls: sortedNames(c.Calls), Exec: slices.Sorted(maps.Keys(c.Execs))}
		if c.Reach != nil {
			pc.Reach = append([]string{}, slices.Sorted(maps.Keys(c.Reach))...)
		}
		if r.Phased() {
			pc.Serving = servingNames(c)
		}
		p.Compartments = append(p.Compartments, pc)
		opts.Comments[c.Name] = countComments(c.Calls)
	}
	if union := r.union(); len(union) > 0 {
		p.Rules = []policy.Rule{{Syscalls: union, Action: policy.ActAllow}}
	}
	return p, opts
}

// arches are the ABIs the recorded calls used; at least x86_64.
func (r *Recording) arches() []syscalls.Arch {
	if len(r.Arches) == 0 {
		return []syscalls.Arch{syscalls.X86_64}
	}
	return slices.Clone(r.Arches)
}

// alwaysAllowed are calls a policy must allow though a recorded run may
// not show them: the kernel makes a thread issue restart_syscall to
// resume a sleep a stop signal (SIGSTOP, then SIGCONT) interrupted, which
// depends on what happens to the process, not on what it does.
var alwaysAllowed = []string{"restart_syscall"}

// union lists, sorted and once each, every call the program made, and
// alwaysAllowed.
func (r *Recording) union() []string {
	names := append(slices.Clone(r.Allowed), alwaysAllowed...)
	names = append(names, sortedNames(r.StartUp)...)
	for _, c := range r.Compartments {
		names = append(names, sortedNames(c.Calls)...)
	}
	for i := range r.Failures {
		names = append(names, sortedNames(r.Failures[i].Calls)...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// countComments says how many times each call was made, where known.
func countComments(calls map[string]uint64) map[string]string {
	comments := map[string]string{}
	for name, n := range calls {
		switch n {
		case 0:
		case 1:
			comments[name] = "1 call"
		default:
			comments[name] = fmt.Sprintf("%d calls", n)
		}
	}
	return comments
}

// WriteTOML writes the recording's policy in syscell's TOML.
func (r *Recording) WriteTOML(w io.Writer) error {
	p, opts := r.Policy()
	return p.WriteTOMLWithOptions(w, opts)
}

// WriteSyso writes the recording in the "syso JSON" of addrfilter's tools:
// {"compartment": {"x86_64 syscall number": count}}, with the calls that
// could not be attributed under "FAILED", as addrfilter writes them, and
// the loader's start-up calls under StartUpName. The format has no
// build-ids, ABIs, rules or phases; a call without an x86_64 number cannot
// be written.
func (r *Recording) WriteSyso(w io.Writer) error {
	out := map[string]map[string]uint64{}
	for _, c := range r.Compartments {
		calls, err := sysoCalls(c.Name, c.Calls)
		if err != nil {
			return err
		}
		out[c.Name] = calls
	}
	if len(r.StartUp) > 0 {
		calls, err := sysoCalls(StartUpName, r.StartUp)
		if err != nil {
			return err
		}
		out[StartUpName] = calls
	}
	failed := map[string]uint64{}
	for i := range r.Failures {
		for name, n := range r.Failures[i].Calls {
			failed[name] += n
		}
	}
	if len(failed) > 0 {
		calls, err := sysoCalls(SysoFailed, failed)
		if err != nil {
			return err
		}
		out[SysoFailed] = calls
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// SysoFailed is the syso JSON key of the calls that could not be
// attributed.
const SysoFailed = "FAILED"

// sysoCalls numbers calls by their x86_64 numbers.
func sysoCalls(owner string, calls map[string]uint64) (map[string]uint64, error) {
	out := map[string]uint64{}
	for name, n := range calls {
		nr, ok := syscalls.Lookup(syscalls.X86_64, name)
		if !ok {
			return nil, fmt.Errorf("record: syso JSON has x86_64 numbers only, and %s has none (called by %s)", name, owner)
		}
		out[strconv.Itoa(int(nr))] = n
	}
	return out, nil
}

// servingNames are the calls of c's policy while serving: those recorded
// while serving, which include a lagging thread's (package trace).
func servingNames(c *Compartment) []string {
	// Never nil: a compartment that makes no call while serving says so
	// (serving = []).
	return append([]string{}, sortedNames(c.Serving)...)
}
