package record

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/syscell/syscell/syscalls"
	"github.com/syscell/syscell/trace"
)

// Phases. A recording with phases (Options.ServingFrom) keeps, besides
// each compartment's calls, those it made while its process served
// (Compartment.Serving): a process serves from its own first call of one
// of the serving calls, that call included, or from its birth when a
// process that served forked it; its threads share its phase (a thread
// started while the process started counts as serving from its birth: it
// runs when the scheduler lets it), and it keeps serving across execve
// (package trace keeps the phase in the kernel). Processes recorded after they started (Attach) serve from
// their next serving call.

// DefaultServingFrom are the calls whose first one starts a process's
// serving phase where none are named: the waits of a server's serving
// loop, and rt_sigsuspend, the wait of a master process (nginx's) whose
// workers serve.
var DefaultServingFrom = []string{"accept", "accept4", "epoll_pwait", "epoll_pwait2", "epoll_wait", "rt_sigsuspend"}

// ServingNumbers numbers the calls names, in every ABI that has them, as
// trace.Syscall.Nr does. A name no ABI knows is an error.
func ServingNumbers(names []string) ([]uint32, error) {
	var nrs []uint32
	for _, name := range names {
		if !syscalls.Known(name) {
			return nil, fmt.Errorf("unknown system call %q", name)
		}
		for _, arch := range syscalls.Arches {
			nr, ok := syscalls.Lookup(arch, name)
			if !ok {
				continue
			}
			if arch == syscalls.I386 {
				nr |= trace.I386
			}
			nrs = append(nrs, nr)
		}
	}
	slices.Sort(nrs)
	return slices.Compact(nrs), nil
}

// Phased says whether the recording tells calls made while serving apart.
func (r *Recording) Phased() bool { return len(r.ServingFrom) > 0 }

// DropPhases makes r a recording without phases: its calls stay, whatever
// their phase.
func (r *Recording) DropPhases() {
	r.ServingFrom = nil
	for _, c := range r.Compartments {
		c.Serving = nil
	}
}

// CheckPhases accepts recordings to merge (Merge) that have phases
// alike: all without, or all serving from the same calls. The error
// names two that differ by their Source.
func CheckPhases(recs ...*Recording) error {
	for _, rec := range recs[min(1, len(recs)):] {
		first := recs[0]
		switch {
		case first.Phased() != rec.Phased():
			with, without := first, rec
			if !first.Phased() {
				with, without = rec, first
			}
			return fmt.Errorf("record: %s has phases (serving from %s) and %s has none: merge recordings made alike (record --phases)",
				with.name(), strings.Join(with.ServingFrom, ", "), without.name())
		case !slices.Equal(first.ServingFrom, rec.ServingFrom):
			return fmt.Errorf("record: %s serves from %s and %s from %s: merge recordings made with the same --serving-from",
				first.name(), strings.Join(first.ServingFrom, ", "), rec.name(), strings.Join(rec.ServingFrom, ", "))
		}
	}
	return nil
}

// name names r in messages.
func (r *Recording) name() string {
	if r.Source == "" {
		return "a recording"
	}
	return r.Source
}

// mergeServing adds c's serving calls to m's.
func mergeServing(m, c *Compartment) {
	if c.Serving == nil {
		return
	}
	if m.Serving == nil {
		m.Serving = map[string]uint64{}
	}
	for name, n := range c.Serving {
		m.Serving[name] += n
	}
}

// servingSet is names as a sorted set.
func servingSet(names []string) []string {
	return slices.Sorted(maps.Keys(setOf(names)))
}
