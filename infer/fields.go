package infer

import "github.com/syscell/syscell/infer/x86"

// callSite is a call of node n.
type callSite struct {
	n int
	c *x86.Call
}

// fieldKey names a field of a function's argument.
type fieldKey struct {
	n int
	f fieldDep
}

// globalField is what the number of a call read from a field of what
// the word at addr in object o points to can be: glibc's set*id
// broadcast hands the other threads the command its caller built, by
// storing a pointer to it in a global. The values are those the
// object's code stores there: a function's argument gives what its
// callers put in that field of it; anything else, any call. A store
// through any other pointer is assumed not to reach the global.
func (s *solver) globalField(o int, addr uint64, off int64) summary {
	var out summary
	found := false
	for _, addrFn := range sortedKeys(s.objs[o].Functions) {
		fn := s.objs[o].Functions[addrFn]
		for _, st := range fn.Stores {
			if st.Dest.Kind != x86.Slot || st.Dest.Consts[0] != addr {
				continue
			}
			found = true
			if st.Value.Kind != x86.Param {
				out.all = true
				continue
			}
			v := s.fieldsAt(s.index[o][addrFn], fieldDep{st.Value.Arg, off})
			out.merge(v)
		}
	}
	if !found {
		out.all = true
	}
	return out
}

// fieldsAt is what node n's callers put in field f: the calls whose
// numbers it can be. A field passed on in a cycle of calls can be
// anything.
func (s *solver) fieldsAt(n int, f fieldDep) *summary {
	k := fieldKey{n, f}
	if v, ok := s.fieldValues[k]; ok {
		if v == nil {
			return &summary{all: true}
		}
		return v
	}
	s.fieldValues[k] = nil
	out := &summary{}
	defer func() { s.fieldValues[k] = out }()
	for _, cs := range s.callersOf(n) {
		switch v := fieldValue(cs.c, f); v.Kind {
		case x86.Const:
			for _, nr := range v.Consts {
				out.nrs.add(nr & 0xffffffff)
			}
		case x86.Field:
			if v.Base().Kind != x86.Param {
				out.all = true
				continue
			}
			out.merge(s.fieldsAt(cs.n, fieldDep{v.Base().Arg, v.Offset()}))
		default:
			out.all = true
		}
	}
	return out
}

// callersOf lists the calls of live code that may reach node n.
func (s *solver) callersOf(n int) []callSite {
	if s.callers == nil {
		s.callers = make([][]callSite, len(s.nodes))
		for m, nd := range s.nodes {
			if nd.fn == nil || !s.live[m] {
				continue
			}
			for i, t := range s.targetsOf(m) {
				for _, callee := range t.nodes {
					s.callers[callee] = append(s.callers[callee], callSite{m, &nd.fn.Calls[i]})
				}
			}
		}
	}
	return s.callers[n]
}
