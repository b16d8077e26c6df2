package policy

import (
	"sort"

	"github.com/syscell/syscell/syscalls"
)

// Branch is one rule as it applies to one syscall number.
type Branch struct {
	Action Action
	Conds  []Cond
	Pos    Pos
}

// Table is a policy resolved for one ABI: syscall numbers instead of names.
// Names the ABI lacks are left out, as libseccomp and Docker do.
type Table struct {
	Arch     syscalls.Arch
	Default  Action
	Syscalls map[uint32][]Branch
}

// Resolved is a policy resolved for a set of ABIs, what a compiled program
// implements.
type Resolved struct {
	// Source is the policy's file, for errors.
	Source  string
	BadArch Action
	// Tables in the order of syscalls.Arches, one per requested ABI.
	Tables []*Table
}

// Resolve maps the policy onto each ABI in arches. Duplicate ABIs collapse.
func (p *Policy) Resolve(arches []syscalls.Arch) *Resolved {
	r := &Resolved{Source: p.Source, BadArch: p.BadArch}
	for _, a := range syscalls.Arches {
		for _, want := range arches {
			if a == want {
				r.Tables = append(r.Tables, p.table(a))
				break
			}
		}
	}
	return r
}

func (p *Policy) table(a syscalls.Arch) *Table {
	t := &Table{Arch: a, Default: p.Default, Syscalls: map[uint32][]Branch{}}
	for _, rule := range p.Rules {
		for _, name := range rule.Syscalls {
			nr, ok := syscalls.Lookup(a, name)
			if !ok {
				continue
			}
			t.Syscalls[nr] = append(t.Syscalls[nr], Branch{Action: rule.Action, Conds: rule.Conds, Pos: rule.Pos})
		}
	}
	return t
}

// Numbers lists the syscall numbers the table has rules for, in order.
func (t *Table) Numbers() []uint32 {
	nrs := make([]uint32, 0, len(t.Syscalls))
	for nr := range t.Syscalls {
		nrs = append(nrs, nr)
	}
	sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })
	return nrs
}
