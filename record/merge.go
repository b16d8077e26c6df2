package record

import (
	"maps"
	"slices"
)

// Merge unions recordings into one, as a policy of several runs must
// allow what any run did: compartments of the same object (path and
// build-id) add up their calls; what is lost, unknown or unattributed adds
// up too. A compartment read without a build-id (syso JSON has none) joins
// the one compartment of its path that has one, if there is exactly one.
// With phases, the calls each compartment made while serving unite too;
// recordings with phases merge only with recordings serving from the same
// calls. The result does not depend on the order of recs.
func Merge(recs ...*Recording) (*Recording, error) {
	if err := CheckPhases(recs...); err != nil {
		return nil, err
	}
	out := &Recording{Unknown: map[uint32]uint64{}, StartUp: map[string]uint64{}}
	if len(recs) > 0 && recs[0].Phased() {
		out.ServingFrom = slices.Clone(recs[0].ServingFrom)
	}
	ids := buildIDs(recs)
	byKey := map[key]*Compartment{}
	failures := map[failureKey]*Failure{}
	for _, rec := range recs {
		for _, c := range rec.Compartments {
			k := mergeKey(c, ids)
			m := byKey[k]
			if m == nil {
				m = &Compartment{Name: c.Name, Path: c.Path, BuildID: k.buildID, Calls: map[string]uint64{}}
				byKey[k] = m
			}
			for name := range c.Execs {
				if m.Execs == nil {
					m.Execs = map[string]bool{}
				}
				m.Execs[name] = true
			}
			// Reach is the object's, whichever recording found it.
			if c.Reach != nil && m.Reach == nil {
				m.Reach = map[string]bool{}
			}
			maps.Copy(m.Reach, c.Reach)
			for name, n := range c.Calls {
				m.Calls[name] += n
			}
			mergeServing(m, c)
		}
		mergeRest(out, rec, failures)
	}
	for _, m := range byKey {
		if m.Path != "" {
			m.Name = m.Path
		}
		out.Compartments = append(out.Compartments, m)
	}
	uniqueNames(out.Compartments)
	for _, k := range slices.SortedFunc(maps.Keys(failures), compareFailureKeys) {
		out.Failures = append(out.Failures, *failures[k])
	}
	slices.Sort(out.Arches)
	out.Arches = slices.Compact(out.Arches)
	slices.Sort(out.Allowed)
	out.Allowed = slices.Compact(out.Allowed)
	slices.Sort(out.VDSO)
	out.VDSO = slices.Compact(out.VDSO)
	return out, nil
}

// buildIDs lists the build-ids each path has in any recording.
func buildIDs(recs []*Recording) map[string][]string {
	ids := map[string][]string{}
	for _, rec := range recs {
		for _, c := range rec.Compartments {
			if c.Path != "" && c.BuildID != "" && !slices.Contains(ids[c.Path], c.BuildID) {
				ids[c.Path] = append(ids[c.Path], c.BuildID)
			}
		}
	}
	return ids
}

// mergeKey identifies c among compartments of several runs.
func mergeKey(c *Compartment, ids map[string][]string) key {
	if c.Path == "" {
		return key{special: c.Name}
	}
	id := c.BuildID
	if id == "" && len(ids[c.Path]) == 1 {
		id = ids[c.Path][0]
	}
	return key{path: c.Path, buildID: id}
}

// mergeRest adds up what is not a compartment.
func mergeRest(out, rec *Recording, failures map[failureKey]*Failure) {
	out.Arches = append(out.Arches, rec.Arches...)
	out.Allowed = append(out.Allowed, rec.Allowed...)
	// What any recording assumed of the vDSO, the merged one does.
	out.VDSO = append(out.VDSO, rec.VDSO...)
	for name, n := range rec.StartUp {
		out.StartUp[name] += n
	}
	for nr, n := range rec.Unknown {
		out.Unknown[nr] += n
	}
	out.Lost.Syscalls += rec.Lost.Syscalls
	out.Lost.Maps += rec.Lost.Maps
	out.Lost.Tasks += rec.Lost.Tasks
	out.Lost.Counts += rec.Lost.Counts
	out.Lost.Other += rec.Lost.Other
	out.Lost.Recursions += rec.Lost.Recursions
	for i := range rec.Failures {
		f := &rec.Failures[i]
		k := failureKey{f.Where, f.Reason}
		m := failures[k]
		if m == nil {
			m = &Failure{Where: f.Where, Reason: f.Reason, Example: f.Example, Calls: map[string]uint64{}}
			failures[k] = m
		}
		for name, n := range f.Calls {
			m.Calls[name] += n
		}
		m.StackNeeded = max(m.StackNeeded, f.StackNeeded)
	}
}
