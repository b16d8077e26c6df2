//go:build linux

package record

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
	"github.com/syscell/syscell/unwind"
)

// recorder consumes the tracer's events in order.
type recorder struct {
	tracer *trace.Tracer
	objs   *attribute.Objects
	// spaces are the address spaces by the kernel's name for them; a
	// missing one is unknown (its listing failed).
	spaces map[uint64]*attribute.Space
	reg    *registry
	// tasks maps each live task to its address space, and users counts
	// an address space's tasks, so that a dead one is forgotten.
	tasks map[int]uint64
	users map[uint64]int
	// counts are the calls attributed here, by compartment and number.
	counts   map[trace.CountKey]uint64
	failures map[failureKey]*Failure
	unknown  map[uint32]uint64
	execs    *execs
	stats    Stats
	// root is where the paths the kernel reports are found, if not from
	// syscell's root (AttachOptions.Root).
	root string
	// untilExec are the processes whose calls are not recorded until
	// they execute a program (AttachOptions.FromExec); nil for none.
	untilExec map[int]bool
	// servingFrom are Options.ServingFrom: the recording has phases.
	servingFrom []string
}

type failureKey struct{ where, reason string }

func newRecorder(t *trace.Tracer, objs *attribute.Objects) *recorder {
	return &recorder{
		tracer:   t,
		objs:     objs,
		spaces:   map[uint64]*attribute.Space{},
		reg:      newRegistry(),
		counts:   map[trace.CountKey]uint64{},
		failures: map[failureKey]*Failure{},
		unknown:  map[uint32]uint64{},
		execs:    newExecs(),
		tasks:    map[int]uint64{},
		users:    map[uint64]int{},
	}
}

// handle applies one event.
func (r *recorder) handle(ev any) error {
	switch e := ev.(type) {
	case *trace.Syscall:
		return r.syscall(e)
	case *trace.Count:
		r.counts[e.Key]++
		if e.Key.Serving {
			r.stats.Serving++
		}
	case *trace.Serve:
		r.stats.ServingProcesses++
	case *trace.ASpace:
		r.aspace(e)
	case *trace.Map:
		r.mapping(e)
	case *trace.Unmap:
		if s := r.spaces[e.ASpace]; s != nil {
			s.Unmap(e.Start, e.End)
		}
	case *trace.Fork:
		r.fork(e)
	case *trace.Exec:
		if r.untilExec[e.TGID] {
			delete(r.untilExec, e.TGID)
			r.setTask(e.OldTID, 0)
			r.setTask(e.TID, e.ASpace)
			return nil
		}
		r.stats.Execs++
		r.execs.exec(e)
		r.setTask(e.OldTID, 0)
		r.setTask(e.TID, e.ASpace)
	case *trace.Exit:
		r.setTask(e.TID, 0)
	default:
		return fmt.Errorf("record: unexpected event %T", ev)
	}
	return nil
}

// setTask records that task tid uses address space a (0: none, it is gone)
// and forgets address spaces no task uses: the kernel never reuses their
// names.
func (r *recorder) setTask(tid int, a uint64) {
	if old, ok := r.tasks[tid]; ok {
		if r.users[old]--; r.users[old] == 0 {
			delete(r.users, old)
			delete(r.spaces, old)
		}
		delete(r.tasks, tid)
	}
	if a != 0 {
		r.tasks[tid] = a
		r.users[a]++
	}
}

func (r *recorder) aspace(e *trace.ASpace) {
	r.setTask(e.TID, e.ASpace)
	if e.Failed {
		delete(r.spaces, e.ASpace)
		return
	}
	r.spaces[e.ASpace] = attribute.NewSpace(r.objs)
}

func (r *recorder) mapping(e *trace.Map) {
	s := r.spaces[e.ASpace]
	if s == nil {
		return
	}
	s.Map(attribute.Mapping{Start: e.Start, End: e.End, Offset: e.Offset, Object: r.object(e)})
}

// object returns the object a mapping event names. A file is opened by the
// path the kernel saw (from root, if the recording has one) and, failing
// that, through the process's map_files while it lives; each must lead to
// the mapped device and inode. A path
// the kernel could not finish is asked of map_files.
func (r *recorder) object(e *trace.Map) *attribute.Object {
	switch e.Kind {
	case trace.MapVDSO:
		return r.objs.VDSO()
	case trace.MapAnon:
		return attribute.AnonExecObject()
	}
	mapFile := fmt.Sprintf("/proc/%d/map_files/%x-%x", e.TGID, e.Start, e.End)
	path := e.Path
	if e.PathCut {
		path, _ = os.Readlink(mapFile)
	}
	if r.root != "" && path != "" {
		return r.objs.File(e.Dev, e.Ino, path, r.root+path, mapFile)
	}
	return r.objs.File(e.Dev, e.Ino, path, mapFile)
}

func (r *recorder) fork(e *trace.Fork) {
	r.setTask(e.ChildTID, e.ChildASpace)
	if r.untilExec[e.TGID] {
		r.untilExec[e.ChildTGID] = true
	}
	if e.ChildTGID == e.TGID {
		r.stats.Threads++
		return
	}
	r.stats.Processes++
	if s := r.spaces[e.ASpace]; s != nil && e.ChildASpace != e.ASpace {
		r.spaces[e.ChildASpace] = s.Clone()
	}
}

// syscall attributes a snapshot and teaches the kernel its path. A call of
// a number no ABI defines is attributed too, so that its path is learnt,
// but it cannot be named in a policy: finish sets it apart.
func (r *recorder) syscall(e *trace.Syscall) error {
	if r.untilExec[e.TGID] {
		return nil
	}
	r.stats.Snapshots++
	if len(e.Holes) > 0 {
		r.stats.Holes++
	}
	if e.Serving {
		r.stats.Serving++
	}
	key := trace.CountKey{Nr: e.Nr, Serving: e.Serving}
	name, _, known := callName(e.Nr)
	if comp, ok := r.tracer.Known(e.Epoch, e.Regs.IP, snapshotReader(e)); ok {
		key.Compartment = comp
		r.counts[key]++
		r.stats.Repeated++
		r.noteExec(e, name, comp)
		return nil
	}
	s := r.spaces[e.ASpace]
	if s == nil {
		r.unattributed(known, e.Nr, name, func() {
			r.fail("[unknown address space]", "its executable mappings could not be listed", fmt.Sprintf("process %d", e.TGID), name)
		})
		return nil
	}
	regs := unwindRegs(&e.Regs)
	res, err := attribute.Attribute(s, e.Nr, &regs, snapshotStack(e))
	if err != nil {
		r.unattributed(known, e.Nr, name, func() { r.failure(err, name) })
		return nil
	}
	key.Compartment = r.reg.id(res)
	r.counts[key]++
	r.noteExec(e, name, key.Compartment)
	if res.StackBytes > r.stats.StackNeeded {
		r.stats.StackNeeded = res.StackBytes
		r.stats.StackNeededBy = fmt.Sprintf("%s by %s", name, r.reg.comps[key.Compartment-1].Name)
	}
	return r.learn(e, res, key.Compartment)
}

// unattributed counts a call the rule could not attribute with fail, or,
// for a number no ABI defines (which no policy can name), as unknown.
func (r *recorder) unattributed(known bool, nr uint32, name string, fail func()) {
	if known {
		fail()
		return
	}
	r.unknown[nr]++
}

// noteExec notes an exec call's compartment (execs.go).
func (r *recorder) noteExec(e *trace.Syscall, name string, comp uint32) {
	if isExecCall(name) {
		r.execs.call(e.TID, comp)
	}
}

func (r *recorder) learn(e *trace.Syscall, res *attribute.Result, comp uint32) error {
	if name, _, _ := callName(e.Nr); e.Epoch == 0 || isExecCall(name) {
		return nil
	}
	learnt, err := r.tracer.Learn(e.Epoch, e.Regs.IP, steps(res.Inputs), comp)
	if errors.Is(err, trace.ErrPathTooLong) {
		r.stats.Unlearnable++
		return nil
	}
	if learnt {
		r.stats.Paths++
	}
	return err
}

// snapshotReader reads a path's steps from a snapshot, as the kernel reads
// them from the live thread; what the snapshot lacks ends the walk.
func snapshotReader(e *trace.Syscall) func(trace.StepKind, int64) (uint64, bool) {
	regs := unwindRegs(&e.Regs)
	stack := snapshotStack(e)
	return func(kind trace.StepKind, arg int64) (uint64, bool) {
		var v uint64
		var err error
		switch kind {
		case trace.StepRegister:
			if arg < 0 || arg >= int64(unwind.RA) {
				return 0, false
			}
			return regs[arg], true
		case trace.StepStack:
			v, err = stack.Word(e.Regs.SP + uint64(arg))
		default:
			v, err = stack.Word(uint64(arg))
		}
		return v, err == nil
	}
}

// snapshotStack returns the memory an unwind of a snapshot reads: the copy of
// the top of its stack, without the pages that could not be copied.
func snapshotStack(e *trace.Syscall) *unwind.Stack {
	s := &unwind.Stack{Addr: e.Regs.SP, Data: e.Stack}
	for _, h := range e.Holes {
		s.Holes = append(s.Holes, unwind.Hole(h))
	}
	return s
}

// steps turns what an unwind read into the kernel's path steps.
func steps(inputs []unwind.Input) []trace.Step {
	out := make([]trace.Step, len(inputs))
	for i, in := range inputs {
		switch in.Kind {
		case unwind.InputRegister:
			out[i] = trace.Step{Kind: trace.StepRegister, Arg: int64(in.Reg), Value: in.Value}
		case unwind.InputStack:
			out[i] = trace.Step{Kind: trace.StepStack, Arg: in.Offset, Value: in.Value}
		default:
			out[i] = trace.Step{Kind: trace.StepMemory, Arg: int64(in.Addr), Value: in.Value}
		}
	}
	return out
}

func unwindRegs(p *trace.PtRegs) unwind.Regs {
	return unwind.Regs{
		unwind.RAX: p.AX, unwind.RDX: p.DX, unwind.RCX: p.CX, unwind.RBX: p.BX,
		unwind.RSI: p.SI, unwind.RDI: p.DI, unwind.RBP: p.BP, unwind.RSP: p.SP,
		unwind.R8: p.R8, unwind.R9: p.R9, unwind.R10: p.R10, unwind.R11: p.R11,
		unwind.R12: p.R12, unwind.R13: p.R13, unwind.R14: p.R14, unwind.R15: p.R15,
		unwind.RA: p.IP,
	}
}

// failure records a call the rule could not attribute.
func (r *recorder) failure(err error, name string) {
	var f *attribute.Failure
	if !errors.As(err, &f) {
		r.fail("[unknown]", err.Error(), err.Error(), name)
		return
	}
	where := "[unmapped]"
	if f.Object != nil {
		where = f.Object.Path
	}
	g := r.fail(where, reason(f), f.Error(), name)
	g.StackNeeded = max(g.StackNeeded, f.StackBytes)
}

// reason names why an unwind failed, without the addresses that would keep
// calls of one cause apart.
func reason(f *attribute.Failure) string {
	switch {
	case errors.Is(f.Err, unwind.ErrOutsideStack):
		return "the stack copy was too short (raise --stack-bytes)"
	case errors.Is(f.Err, unwind.ErrStackHole):
		return "a page of the stack could not be copied (not in memory)"
	case errors.Is(f.Err, unwind.ErrNoFDE):
		return "code without CFI"
	case errors.Is(f.Err, attribute.ErrUnmapped):
		return "code in no known executable mapping"
	case errors.Is(f.Err, unwind.ErrLoop):
		return "corrupt stack or CFI"
	case f.Object != nil && f.Object.Err != nil:
		return "the object's file could not be read"
	}
	return "unwind failed"
}

// fail counts a call that could not be attributed, and returns its group.
func (r *recorder) fail(where, why, example, name string) *Failure {
	k := failureKey{where, why}
	f := r.failures[k]
	if f == nil {
		f = &Failure{Where: where, Reason: why, Example: example, Calls: map[string]uint64{}}
		r.failures[k] = f
	}
	f.Calls[name]++
	return f
}

// finish adds the kernel's counts and returns the recording.
func (r *recorder) finish(kernel map[trace.CountKey]uint64, lost trace.Lost) (*Recording, error) {
	rec := &Recording{Unknown: r.unknown, Lost: lost, Stats: r.stats}
	for k, n := range kernel {
		r.counts[k] += n
		rec.Stats.Counted += n
		if k.Serving {
			rec.Stats.Serving += n
		}
	}
	if len(r.servingFrom) > 0 {
		rec.ServingFrom = servingSet(r.servingFrom)
		for _, c := range r.reg.comps {
			c.Serving = map[string]uint64{}
		}
	}
	for k, n := range r.counts {
		c, err := r.reg.get(k.Compartment)
		if err != nil {
			return nil, err
		}
		name, arch, known := callName(k.Nr)
		if !known {
			rec.Unknown[k.Nr] += n
			continue
		}
		c.Calls[name] += n
		if k.Serving {
			c.Serving[name] += n
		}
		if !slices.Contains(rec.Arches, arch) {
			rec.Arches = append(rec.Arches, arch)
		}
	}
	slices.Sort(rec.Arches)
	r.execs.grant(r.reg)
	for id, c := range r.reg.comps {
		switch {
		case uint32(id+1) == startUpID:
			rec.StartUp = c.Calls
		case len(c.Calls) > 0:
			rec.Compartments = append(rec.Compartments, c)
		}
	}
	uniqueNames(rec.Compartments)
	for _, k := range slices.SortedFunc(maps.Keys(r.failures), compareFailureKeys) {
		rec.Failures = append(rec.Failures, *r.failures[k])
	}
	return rec, nil
}
