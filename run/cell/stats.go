package cell

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/syscell/syscell/syscalls"
)

// Supervised is a kind of call the supervisor decided, and how often.
type Supervised struct {
	// Owner is who the calls belong to: a compartment, OwnerRuntime, the
	// path of an object outside every compartment, or OwnerUnattributed.
	Owner string `json:"owner"`
	// Syscall is the x86_64 name of the call.
	Syscall string `json:"syscall"`
	// Allowed is the verdict: the call ran, or was denied (in audit mode
	// a denied call runs all the same).
	Allowed bool `json:"allowed"`
	// Count is how many such calls there were.
	Count int `json:"count"`
	// Why is, for unattributed calls, why the first could not be
	// attributed.
	Why string `json:"why,omitempty"`
}

type statKey struct {
	owner   string
	nr      uint32
	allowed bool
}

// stats counts supervised calls, and how long the supervisor took for
// them.
type stats struct {
	calls map[statKey]*Supervised
	latencies
}

func newStats() stats { return stats{calls: map[statKey]*Supervised{}} }

func (st stats) count(owner string, nr uint32, allowed bool, why error) {
	k := statKey{owner, nr, allowed}
	c := st.calls[k]
	if c == nil {
		name, ok := syscalls.Name(syscalls.X86_64, nr)
		if !ok {
			name = "#" + strconv.FormatUint(uint64(nr), 10)
		}
		c = &Supervised{Owner: owner, Syscall: name, Allowed: allowed}
		if why != nil {
			c.Why = why.Error()
		}
		st.calls[k] = c
	}
	c.Count++
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// list returns the counts sorted by owner, system call and verdict.
func (st stats) list() []Supervised {
	out := make([]Supervised, 0, len(st.calls))
	for _, c := range st.calls {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Supervised) int {
		return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Syscall, b.Syscall), boolCompare(a.Allowed, b.Allowed))
	})
	return out
}
