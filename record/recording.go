package record

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syscell/syscell/syscalls"
	"github.com/syscell/syscell/trace"
)

// Recording is what one run of a program showed.
type Recording struct {
	// Compartments that made calls, sorted by name.
	Compartments []*Compartment
	// StartUp counts, by syscall name, the calls the dynamic loader made
	// starting the program (StartUpName), which a policy allows in its
	// rules only.
	StartUp map[string]uint64
	// Arches are the ABIs the program made calls through.
	Arches []syscalls.Arch
	// Failures are the calls that could not be attributed, grouped by
	// where and why.
	Failures []Failure
	// Unknown counts calls of numbers no ABI defines, by number as
	// trace.Syscall.Nr gives it.
	Unknown map[uint32]uint64
	// Allowed are calls a policy merged into this recording allowed
	// outside any compartment.
	Allowed []string
	// ServingFrom, in a recording with phases (see phases.go), names
	// the calls whose first one starts a process's serving phase,
	// sorted; nil without phases.
	ServingFrom []string
	// VDSO names the functions an inference assumed the vDSO exports
	// (policy.Policy.VDSO), sorted; nil for a recording alone.
	VDSO []string
	// Source names where the recording came from, for messages: the file
	// Load read, or the run.
	Source string
	// Lost is what the kernel could not deliver.
	Lost trace.Lost
	// Stats describe the recorder's work.
	Stats Stats
}

// Failure is a group of calls the rule could not attribute.
type Failure struct {
	// Where is the object whose frame stopped the unwind, or
	// "[unmapped]" or "[unknown address space]".
	Where string
	// Reason is why, without addresses, so that calls group.
	Reason string
	// Example is one call's full error.
	Example string
	// StackNeeded is the most stack any of the unwinds read or tried
	// to read.
	StackNeeded int64
	// Calls counts the calls by syscall name.
	Calls map[string]uint64
}

// Total is the number of calls in f.
func (f *Failure) Total() uint64 { return sum(f.Calls) }

// Stats describe a recording.
type Stats struct {
	// Processes and Threads are the tasks traced; Execs the execve calls
	// that succeeded in them.
	Processes, Threads, Execs int
	// Snapshots are the calls sent to user space; Repeated those of them
	// whose path had been learnt meanwhile (they needed no unwind);
	// Counted the calls the kernel attributed itself from learnt paths.
	Snapshots, Repeated, Counted uint64
	// Paths is how many call paths the kernel was taught; Unlearnable
	// the snapshots whose path was too long to teach.
	Paths, Unlearnable uint64
	// StackCopy is the size of a stack snapshot; StackNeeded the most
	// any attributed call's unwind read, and StackNeededBy where that
	// call came from.
	StackCopy     int
	StackNeeded   int64
	StackNeededBy string
	// Holes counts the snapshots with pages of the stack that could not
	// be copied (never touched, or swapped out).
	Holes uint64
	// Serving counts the calls made while serving, attributed or not,
	// and ServingProcesses the processes that served (phases.go).
	Serving          uint64
	ServingProcesses int
	// Interrupted says the recording stopped before every traced task
	// had exited; Left is how many were still traced.
	Interrupted bool
}

// Calls returns the total number of calls recorded, attributed or not.
func (r *Recording) Calls() uint64 {
	var n uint64
	for _, c := range r.Compartments {
		n += sum(c.Calls)
	}
	for i := range r.Failures {
		n += r.Failures[i].Total()
	}
	return n + sum(r.Unknown) + sum(r.StartUp)
}

// Unattributed returns the number of calls that could not be attributed.
func (r *Recording) Unattributed() uint64 {
	var n uint64
	for i := range r.Failures {
		n += r.Failures[i].Total()
	}
	return n
}

// Lossy says whether the recording missed or failed to attribute any call:
// a policy made from it may lack calls the program makes.
func (r *Recording) Lossy() bool { return r.Unattributed() > 0 || r.Lost.Total() > 0 }

// Summary describes the recording in a few lines for people.
func (r *Recording) Summary() string {
	var b strings.Builder
	s := &r.Stats
	fmt.Fprintf(&b, "recorded %s of %s (%s, %s) in %s\n", count(r.Calls(), "call"), count(s.Processes, "process"),
		count(s.Threads, "thread"), count(s.Execs, "exec"), count(len(r.Compartments), "compartment"))
	if r.Phased() {
		fmt.Fprintf(&b, "  %s made while serving, by %s (serving from the first of %s, or from birth by a serving process)\n",
			count(s.Serving, "call"), count(s.ServingProcesses, "process"), strings.Join(r.ServingFrom, ", "))
	}
	if n := sum(r.StartUp); n > 0 {
		fmt.Fprintf(&b, "  %s by the loader starting the program, before any of its code: in the rules, in no compartment\n", count(n, "call"))
	}
	fmt.Fprintf(&b, "  %d attributed in the kernel from %d learnt paths, %d from stack snapshots (%d before their path was learnt; %d paths too long to learn)\n",
		s.Counted, s.Paths, s.Snapshots, s.Repeated, s.Unlearnable)
	fmt.Fprintf(&b, "  deepest unwind read %d bytes of the stack (%s); snapshots copy %d\n", s.StackNeeded, s.StackNeededBy, s.StackCopy)
	if n := sum(r.Unknown); n > 0 {
		fmt.Fprintf(&b, "  %d calls of numbers no ABI defines, left out: %s\n", n, formatUnknown(r.Unknown))
	}
	if s.Interrupted {
		b.WriteString("  interrupted: traced tasks were still running\n")
	}
	if r.Lost.Total() > 0 {
		l := r.Lost
		fmt.Fprintf(&b, "  LOST %d events: %d call snapshots, %d mappings, %d tasks, %d counts, %d others, %d program runs skipped\n",
			l.Total(), l.Syscalls, l.Maps, l.Tasks, l.Counts, l.Other, l.Recursions)
	}
	for i := range r.Failures {
		f := &r.Failures[i]
		fmt.Fprintf(&b, "  UNATTRIBUTED %s (%s) from %s: %s; the unwinds reached %d bytes up the stack\n    e.g. %s\n",
			count(f.Total(), "call"), strings.Join(sortedNames(f.Calls), " "), f.Where, f.Reason, f.StackNeeded, f.Example)
	}
	return b.String()
}

// count writes n and a noun, in the plural unless n is 1.
func count[N int | uint64](n N, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "s"):
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func formatUnknown(m map[uint32]uint64) string {
	var parts []string
	for _, nr := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%#x (%d)", nr, m[nr]))
	}
	return strings.Join(parts, ", ")
}

func sum[K comparable](m map[K]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func sortedNames(m map[string]uint64) []string {
	return slices.Sorted(maps.Keys(m))
}

func compareFailureKeys(a, b failureKey) int {
	return cmp.Or(strings.Compare(a.where, b.where), strings.Compare(a.reason, b.reason))
}
