package privilege

import "slices"

// Diff compares the scores of two files under one ranking, in each phase.
type Diff struct {
	Old, New Score
	// Compartments are the old file's, in its order, each with its
	// match in the new file, then the new file's that match none.
	Compartments []Change
	// Union compares the unions.
	Union Change
}

// Phased says whether either file has phases; without, each serving
// phase is its file's one phase.
func (d Diff) Phased() bool { return d.Old.Phased || d.New.Phased }

// Change is how one compartment differs between two files.
type Change struct {
	// Old and New are the compartment in each file; one of them is nil
	// when the compartment is in one file only.
	Old, New *Scored
	// Added lists the syscalls New has and Old lacks, Removed the
	// reverse.
	Added, Removed []string
	// ServingAdded and ServingRemoved are the same for the serving
	// sets.
	ServingAdded, ServingRemoved []string
}

// Compare matches the compartments of old and new (see matches) and says
// what changed in each.
func Compare(old, new Score) Diff {
	d := Diff{Old: old, New: new, Union: change(&old.Union, &new.Union)}
	used := make([]bool, len(new.Compartments))
	for i := range old.Compartments {
		o := &old.Compartments[i]
		var n *Scored
		for j := range new.Compartments {
			if !used[j] && matches(o.Compartment, new.Compartments[j].Compartment) {
				used[j], n = true, &new.Compartments[j]
				break
			}
		}
		d.Compartments = append(d.Compartments, change(o, n))
	}
	for j := range new.Compartments {
		if !used[j] {
			d.Compartments = append(d.Compartments, change(nil, &new.Compartments[j]))
		}
	}
	return d
}

// matches reports whether two compartments are the same object: by
// build-id when both have one (the same file under another path, on
// another machine), else by path. A compartment without a path is known by
// its name, which for syso and addrfilter is a path or a file name.
func matches(a, b Compartment) bool {
	if a.BuildID != "" && b.BuildID != "" {
		return a.BuildID == b.BuildID
	}
	return a.identity() == b.identity()
}

func (c Compartment) identity() string {
	if c.Path != "" {
		return c.Path
	}
	return c.Name
}

func change(old, new *Scored) Change {
	return Change{
		Old:            old,
		New:            new,
		Added:          minus(syscallsOf(new), syscallsOf(old)),
		Removed:        minus(syscallsOf(old), syscallsOf(new)),
		ServingAdded:   minus(servingOf(new), servingOf(old)),
		ServingRemoved: minus(servingOf(old), servingOf(new)),
	}
}

// Name is the compartment's name in the new file, else in the old one.
func (c Change) Name() string {
	if c.New != nil {
		return c.New.Name
	}
	return c.Old.Name
}

// Delta is the change in privilege; a compartment missing from a file has
// none there.
func (c Change) Delta() int { return privilegeOf(c.New) - privilegeOf(c.Old) }

// ServingDelta is the change in serving privilege.
func (c Change) ServingDelta() int { return servingPrivilegeOf(c.New) - servingPrivilegeOf(c.Old) }

func syscallsOf(s *Scored) []string {
	if s == nil {
		return nil
	}
	return s.Syscalls
}

func servingOf(s *Scored) []string {
	if s == nil {
		return nil
	}
	return s.Serving
}

func privilegeOf(s *Scored) int {
	if s == nil {
		return 0
	}
	return s.Privilege
}

func servingPrivilegeOf(s *Scored) int {
	if s == nil {
		return 0
	}
	return s.ServingPrivilege
}

// minus lists the names of a that b lacks; both are sorted sets.
func minus(a, b []string) []string {
	var out []string
	for _, name := range a {
		if _, found := slices.BinarySearch(b, name); !found {
			out = append(out, name)
		}
	}
	return out
}
