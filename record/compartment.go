package record

import (
	"fmt"
	"slices"
	"strings"

	"github.com/syscell/syscell/attribute"
)

// Names of the compartments that are not files.
const (
	RuntimeName  = "[runtime]"
	AnonExecName = "[anon-exec]"
	// StartUpName collects the calls the dynamic loader makes starting
	// the program (attribute.Result.StartUp): they come before the
	// per-library filter, so they are the rules' alone, never a
	// compartment's (Recording.StartUp).
	StartUpName = "[start-up]"
)

// Compartment is what a recording knows of one compartment.
type Compartment struct {
	// Name is the compartment's name in the policy: the object's path,
	// or RuntimeName, or AnonExecName. Objects that share a path are told
	// apart by their build-id (see uniqueNames).
	Name    string
	Path    string
	BuildID string
	// Calls counts the calls by syscall name.
	Calls map[string]uint64
	// Serving, in a recording with phases, counts the calls made while
	// serving (also in Calls), by name: never nil there, nil without
	// phases. Read from a policy, its counts are 0 (unknown).
	Serving map[string]uint64
	// Execs names the compartments of the programs its exec calls
	// started.
	Execs map[string]bool
	// Reach, where known (nil where not), holds every call the object's
	// code can make, as syscell infer finds it (policy.Compartment.Reach):
	// a fact of the object, the same in every run.
	Reach map[string]bool
}

// key identifies a compartment across runs and processes, as a policy
// does: by path and build-id. Two files at one path with one build-id (or
// none) are one compartment.
type key struct {
	path, buildID string
	special       string
}

// registry numbers compartments for the kernel's counts.
type registry struct {
	ids   map[key]uint32
	comps []*Compartment
}

// The kernel counts under these numbers.
const (
	runtimeID uint32 = iota + 1
	anonExecID
	startUpID
)

func newRegistry() *registry {
	r := &registry{ids: map[key]uint32{}}
	r.add(key{special: RuntimeName}, &Compartment{Name: RuntimeName})
	r.add(key{special: AnonExecName}, &Compartment{Name: AnonExecName})
	r.add(key{special: StartUpName}, &Compartment{Name: StartUpName})
	return r
}

func (r *registry) add(k key, c *Compartment) uint32 {
	c.Calls = map[string]uint64{}
	r.comps = append(r.comps, c)
	id := uint32(len(r.comps))
	r.ids[k] = id
	return id
}

// id returns the number of the compartment the rule's result res puts
// the call in.
func (r *registry) id(res *attribute.Result) uint32 {
	obj := res.Object
	switch {
	case res.StartUp:
		return startUpID
	case obj == nil:
		return runtimeID
	case obj.Kind == attribute.AnonExec:
		return anonExecID
	}
	k := key{path: obj.Path, buildID: obj.BuildID}
	if id, ok := r.ids[k]; ok {
		return id
	}
	return r.add(k, &Compartment{Name: obj.Path, Path: obj.Path, BuildID: obj.BuildID})
}

// get returns the compartment numbered id.
func (r *registry) get(id uint32) (*Compartment, error) {
	if id == 0 || int(id) > len(r.comps) {
		return nil, fmt.Errorf("record: the kernel counted calls for unknown compartment %d", id)
	}
	return r.comps[id-1], nil
}

// uniqueNames sorts compartments by name, after telling apart those that
// share a path (a library replaced during the run, or one path in two
// mount namespaces) by their build-ids.
func uniqueNames(comps []*Compartment) {
	byName := map[string]int{}
	for _, c := range comps {
		byName[c.Name]++
	}
	for _, c := range comps {
		if byName[c.Name] > 1 {
			c.Name = fmt.Sprintf("%s [build-id %s]", c.Path, orNone(c.BuildID))
		}
	}
	slices.SortFunc(comps, func(a, b *Compartment) int { return strings.Compare(a.Name, b.Name) })
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}
