package cell

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// Phases (policy.ServingFrom): a process serves from its first call of a
// serving-loop wait, or from its birth when a process that serves forked
// it, as package record records them. The filter sends a compartment's
// calls it may make only while starting to the supervisor, which keeps
// each process's phase itself: what the program's memory says could be
// rewritten by any of its libraries. The audit library marks the first
// call of each serving-from wrapper a compartment binds (audit/phase.c);
// a call made otherwise (from libc's own code, or a syscall instruction)
// starts nothing, so a process serves no sooner than recorded, at worst
// later. A process forked within a clock tick (10 ms) of its parent's
// mark is not known to be born after it, and starts, as its memory says
// it serves, in the starting phase for good: phases narrow it no more.

// markServing is the mark of a process's first serving call.
const markServing = markFlags | 4

// servingNumbers are the x86_64 numbers of p's serving-from calls.
func servingNumbers(p *policy.Policy) []uint32 {
	var out []uint32
	for _, name := range p.ServingFrom {
		if nr, ok := syscalls.Lookup(syscalls.X86_64, name); ok {
			out = append(out, nr)
		}
	}
	return out
}

// phased says whether some compartment may make calls only while
// starting.
func phased(p *policy.Policy) bool {
	if !p.Phased() {
		return false
	}
	for _, c := range p.Compartments {
		if c.Serving != nil && len(c.Serving) < len(c.Syscalls) {
			return true
		}
	}
	return false
}

// startServing notes that p serves from now on, if it did not already.
func (s *supervisor) startServing(p *process) {
	now := boottime()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.servingSince == 0 {
		p.servingSince = now
		s.served++
	}
}

// serving says whether p serves. A nil p (its thread gone) does not.
func (s *supervisor) serving(p *process) bool {
	if p == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return p.servingSince != 0
}

// mayMake says whether compartment name, in process p, may make call nr
// in p's phase.
func (s *supervisor) mayMake(p *process, name string, nr uint32) bool {
	return s.spec.Allowed[name][nr] || s.spec.Starting[name][nr] && !s.serving(p)
}

// inheritedServing is when process tgid, seen for the first time, began
// to serve: at its birth, if its line was born after its nearest known
// ancestor began to serve; 0 for not yet. s.mu is held.
func (s *supervisor) inheritedServing(tgid int) uint64 {
	ancestor, child := s.nearestKnown(tgid)
	if ancestor == nil || ancestor.servingSince == 0 {
		return 0
	}
	line, err := bornAt(child)
	if err != nil || line < ancestor.servingSince {
		return 0
	}
	born, err := bornAt(tgid)
	if err != nil {
		return 0
	}
	return born
}

// boottime is CLOCK_BOOTTIME in nanoseconds, the clock of the start
// times /proc gives.
func boottime() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(fmt.Sprintf("cell: CLOCK_BOOTTIME: %v", err))
	}
	return uint64(ts.Nano())
}

// userHZ is the unit of the start times in /proc/PID/stat: USER_HZ,
// 100 on x86.
const userHZ = 100

// bornAt is the earliest boot time at which process pid can have
// started: /proc says it in clock ticks.
func bornAt(pid int) (uint64, error) {
	b, err := readAll(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cell: %w", err)
	}
	return parseBorn(string(b))
}

// parseBorn reads the start time, the 22nd field, from a stat line,
// whose second field (the command, in parentheses) may hold anything.
func parseBorn(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	fields := strings.Fields(stat[i+1:])
	const startTime = 22 - 3 // fields after the command start at the third
	if i < 0 || len(fields) <= startTime {
		return 0, fmt.Errorf("cell: a stat line with no start time: %q", stat)
	}
	ticks, err := strconv.ParseUint(fields[startTime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cell: start time in a stat line: %w", err)
	}
	return ticks * (1e9 / userHZ), nil
}
