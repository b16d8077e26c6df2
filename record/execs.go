package record

import (
	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
)

// A policy says which programs each compartment may start with their own
// compartments (policy.Compartment.Exec): any other program it starts is
// bounded by its own calls. So the recorder notes, for each exec that
// succeeded, the compartment that made the call and the program started:
// exec calls are never counted in the kernel, so that each reaches user
// space with its thread.

// isExecCall says whether name starts a new image.
func isExecCall(name string) bool { return name == "execve" || name == "execveat" }

// execs follows exec calls to the images they start.
type execs struct {
	// by is the compartment of each thread's last exec call.
	by map[int]uint32
	// started holds, by compartment, the programs its execs started.
	started map[uint32]map[string]bool
}

func newExecs() *execs {
	return &execs{by: map[int]uint32{}, started: map[uint32]map[string]bool{}}
}

// call notes an exec call of thread tid, attributed to comp.
func (x *execs) call(tid int, comp uint32) { x.by[tid] = comp }

// exec notes that an exec succeeded.
func (x *execs) exec(e *trace.Exec) {
	comp, ok := x.by[e.OldTID]
	delete(x.by, e.OldTID)
	if !ok {
		return
	}
	if x.started[comp] == nil {
		x.started[comp] = map[string]bool{}
	}
	x.started[comp][e.Filename] = true
}

// grant fills in each compartment's Execs: the programs its execs
// started, by their compartment's name, or, for a program whose
// executable made no call of its own (python3's, which hands over to
// libpython at once) and so has no compartment, by its path, where it is
// an ELF file: otherwise it would run bounded by its caller's calls.
func (x *execs) grant(reg *registry) {
	byPath := map[string]*Compartment{}
	for _, c := range reg.comps {
		if c.Path != "" && len(c.Calls) > 0 {
			byPath[c.Path] = c
		}
	}
	for id, programs := range x.started {
		from, err := reg.get(id)
		if err != nil {
			continue
		}
		for path := range programs {
			name := path
			if to := byPath[path]; to != nil {
				name = to.Name
			} else if _, err := attribute.FileBuildID(path); err != nil {
				continue
			}
			if from.Execs == nil {
				from.Execs = map[string]bool{}
			}
			from.Execs[name] = true
		}
	}
}
