package cell

import (
	"errors"
	"fmt"
	"slices"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/unwind"
)

// Owners that are not objects, as Supervised reports them.
const (
	// OwnerRuntime: a call the runtime makes on its own (start-up, thread
	// exit), with no caller outside it.
	OwnerRuntime = runtimeCompartment
	// OwnerUnattributed: a call the supervisor could not attribute.
	OwnerUnattributed = "[unattributed]"
	// OwnerStartUp: a call the dynamic loader makes starting an image
	// the program executed (record.StartUpName): the rules' alone.
	OwnerStartUp = "[start-up]"
)

// owner is who a supervised call belongs to.
type owner struct {
	// compartment is the compartment, or "" for none.
	compartment string
	// label names the owner for the report: the compartment, OwnerRuntime,
	// or the path of an object outside every compartment.
	label string
	// runtime marks the runtime's own calls, and startUp those of them
	// the loader makes starting an image.
	runtime, startUp bool
	// proc is the caller's process, where the supervisor found it.
	proc *process
	// err is errSlow for an owner the receiving thread could not find at
	// once (filterOwner).
	err error
}

// notifiedRegs are the registers a notification and /proc/TID/syscall
// give: the number, the arguments, the stack pointer and the instruction
// pointer. An unwind that needs another one (a frame whose CFA is its
// frame pointer, saved nowhere below it) needs the thread's registers
// from ptrace (readRegisters).
var notifiedRegs = map[unwind.Reg]bool{
	unwind.RAX: true, unwind.RDI: true, unwind.RSI: true, unwind.RDX: true,
	unwind.R10: true, unwind.R8: true, unwind.R9: true, unwind.RSP: true, unwind.RA: true,
}

// known says whether an unwind may use reg, given whether the
// callee-saved registers were read.
func known(reg unwind.Reg, full bool) bool {
	return notifiedRegs[reg] || full && slices.Contains(calleeSaved, reg)
}

// errUnknownRegister reports an unwind that needs a register the
// supervisor does not know.
var errUnknownRegister = errors.New("the unwind needs a register the supervisor does not know")

// entryRegs are the registers of a call stopped at entry.
func entryRegs(d *bpf.SeccompData, e entry) *unwind.Regs {
	var r unwind.Regs
	r[unwind.RAX] = uint64(d.Nr)
	r[unwind.RDI], r[unwind.RSI], r[unwind.RDX] = d.Args[0], d.Args[1], d.Args[2]
	r[unwind.R10], r[unwind.R8], r[unwind.R9] = d.Args[3], d.Args[4], d.Args[5]
	r[unwind.RSP], r[unwind.RA] = e.sp, e.pc
	return &r
}

// attribute applies the attribution rule to a call, and maps its owner
// to a compartment; full says whether regs hold the callee-saved
// registers. It returns the unwind's inputs for the cache.
func (s *supervisor) attribute(space *attribute.Space, regs *unwind.Regs, mem unwind.Memory, full bool) (owner, []unwind.Input, error) {
	res, err := attribute.Attribute(space, uint32(regs[unwind.RAX]), regs, mem)
	if err != nil {
		return owner{}, nil, err
	}
	for _, in := range res.Inputs {
		if in.Kind == unwind.InputRegister && !known(in.Reg, full) {
			return owner{}, nil, fmt.Errorf("%w: %s", errUnknownRegister, in.Reg)
		}
	}
	switch {
	case res.StartUp:
		return owner{label: OwnerStartUp, runtime: true, startUp: true}, res.Inputs, nil
	case res.Object == nil:
		return owner{compartment: runtimeCompartment, label: OwnerRuntime, runtime: true}, res.Inputs, nil
	case res.Object.Kind == attribute.AnonExec:
		o, err := s.anonOwner(space, regs, mem, res.Frames)
		return o, res.Inputs, err
	}
	if name, ok := s.ids.compartmentOf(res.Object); ok {
		return owner{compartment: name, label: name}, res.Inputs, nil
	}
	return owner{label: res.Object.Path}, res.Inputs, nil
}

// anonOwner is the owner of a call whose frame number frames lies in
// anonymous executable memory: the compartment of its stub window slot
// (a stub called into the runtime, as a cancellation point does), or the
// anonymous-memory compartment.
func (s *supervisor) anonOwner(space *attribute.Space, regs *unwind.Regs, mem unwind.Memory, frames int) (owner, error) {
	c := unwind.NewCursor(regs, mem, space)
	for range frames {
		if err := c.Next(); err != nil {
			return owner{}, err
		}
	}
	site := c.CallSite()
	if w := s.win; site >= w.base && site < w.base+w.size() {
		name := s.ids.names[(site-w.base)>>w.shift]
		return owner{compartment: name, label: name}, nil
	}
	if _, ok := s.spec.Allowed[anonExecCompartment]; ok {
		return owner{compartment: anonExecCompartment, label: anonExecCompartment}, nil
	}
	return owner{label: anonExecCompartment}, nil
}

// owner finds who the notified call belongs to, copying the caller's
// stack into w's buffer.
func (s *supervisor) owner(n *notify.Notification, w *worker) (owner, error) {
	t, st, err := s.stoppedAt(n, w)
	if err != nil {
		return owner{}, err
	}
	o, err := s.ownerOf(t, st, n, w)
	o.proc = t.proc
	return o, err
}

// stop is where a notified thread waits: its call, its process's epoch,
// its stack, and whether regs hold its callee-saved registers too.
type stop struct {
	e    entry
	ep   epoch
	mem  *memory
	regs *unwind.Regs
	full bool
}

// stoppedAt finds where the notified thread waits: in the snapshot the
// kernel took of it, if it took one, else in /proc and its memory.
func (s *supervisor) stoppedAt(n *notify.Notification, w *worker) (*thread, stop, error) {
	if t, st, ok := s.snapshotOf(n, w); ok {
		s.fromSnapshots.Add(1)
		return t, st, nil
	}
	s.fromProc.Add(1)
	t, e, err := s.stopped(n)
	if err != nil {
		return nil, stop{}, err
	}
	ep, mem, err := readMemory(t.tid, s.epochAt, e.sp, w.stack)
	if err != nil {
		return nil, stop{}, err
	}
	return t, stop{e: e, ep: ep, mem: mem, regs: entryRegs(&n.Data, e)}, nil
}

// ownerOf finds who the call thread t is stopped at belongs to. On the
// receiving thread, only from the call-chain cache.
func (s *supervisor) ownerOf(t *thread, st stop, n *notify.Notification, w *worker) (owner, error) {
	p := t.proc
	e, ep, mem, regs := st.e, st.ep, st.mem, st.regs
	// The process's mappings and cache, one call at a time; and the
	// registers saved for a call made again, which the worker that read
	// them stores before it lets go.
	if w.inline && !p.mu.TryLock() {
		return owner{}, errSlow
	} else if !w.inline {
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	fresh := ep.stable() && ep == p.epoch && p.space != nil
	if fresh {
		if o, ok := p.chains.lookup(regs, mem); ok && !s.hasSaved(t.tid) {
			return o, nil
		}
	}
	if w.inline {
		return owner{}, errSlow
	}
	// Registers read for the call are taken, even where the snapshot
	// has them: kept, they would send every later call to a worker.
	saved := s.savedRegs(t.tid, e, regs)
	full := st.full || saved
	if !fresh {
		if err := s.readSpace(p, ep); err != nil {
			return owner{}, err
		}
	}
	o, inputs, err := s.attribute(p.space, regs, mem, full)
	if errors.Is(err, attribute.ErrUnmapped) {
		// Code mapped without the loader (a JIT, or a library mapped
		// by hand) since the maps were read, or, in a forked child,
		// since its parent's were.
		if err := s.readOwnSpace(p, ep); err != nil {
			return owner{}, err
		}
		o, inputs, err = s.attribute(p.space, regs, mem, full)
	}
	if err != nil && !full {
		// The unwind may have needed a register the notification does
		// not carry.
		return s.withRegisters(t, e, err)
	}
	if err != nil {
		return owner{}, err
	}
	if ep.stable() {
		p.chains.learn(e.pc, inputs, o)
	}
	return o, nil
}

// withRegisters reads the thread's registers for the call it will make
// again, and returns errRetry; or, where it cannot, the unwind's error.
func (s *supervisor) withRegisters(t *thread, e entry, unwindErr error) (owner, error) {
	regs, err := s.tracer.registers(t.tid)
	if err != nil {
		return owner{}, errors.Join(unwindErr, err)
	}
	s.mu.Lock()
	s.saved[t.tid] = &saved{sp: e.sp, pc: e.pc, regs: regs}
	s.mu.Unlock()
	return owner{}, errRetry
}

// hasSaved says whether registers were read for the thread's call: it is
// being made again, and they are to be used.
func (s *supervisor) hasSaved(tid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved[tid] != nil
}

// savedRegs adds to regs the registers read for the thread's call, if it
// is the call they were read for, and says whether it did.
func (s *supervisor) savedRegs(tid int, e entry, regs *unwind.Regs) bool {
	s.mu.Lock()
	sv := s.saved[tid]
	delete(s.saved, tid)
	s.mu.Unlock()
	if sv == nil {
		return false
	}
	if sv.sp != e.sp || sv.pc != e.pc {
		return false
	}
	sv.fill(regs)
	return true
}

// readSpace reads the process's executable mappings afresh, or takes
// its parent's where it is a fork of it.
func (s *supervisor) readSpace(p *process, ep epoch) error {
	if space, code := s.forkedSpace(p, ep); space != nil {
		p.space, p.epoch, p.chains, p.code = space, ep, newChains(), code
		return nil
	}
	return s.readOwnSpace(p, ep)
}

// readOwnSpace reads the process's executable mappings from /proc.
func (s *supervisor) readOwnSpace(p *process, ep epoch) error {
	execs := p.execs.Load()
	space, err := attribute.ReadSpace(p.tgid, s.objs)
	var code *sealedCode
	if err == nil {
		var reported map[compartment.Range]bool
		if p.tgid == s.started && execs == 0 {
			reported = s.reported
		}
		space, code, err = loadedCode(p.tgid, space, s.objs, s.sealed, p.code, execs, reported)
	}
	if err != nil {
		return fmt.Errorf("cell: mappings of process %d: %w", p.tgid, err)
	}
	p.space, p.epoch, p.chains, p.code = space, ep, newChains(), code
	return nil
}

// forkedSpace returns a copy of the mappings of p's parent, where p is a
// copy of it, and what its parent's last read found sealed (a fork keeps
// the seals, and the image): a fork keeps every mapping where it was, and the epoch
// page, copied with them, still holds what the parent's held when its
// mappings were read, as long as neither changed its objects since. So
// the children of a server or a shell, forked by the hundred, need not
// read their mappings and their smaps anew (milliseconds each). A parent
// that made no call the supervisor decided has its mappings read for its
// first child: a shell's own calls may all be decided in the kernel,
// while each of its children asks for an exec. A page of code written
// through /proc/PID/mem after the fork would go unseen until the next
// read, as it would in the parent (docs/THREAT-MODEL.md).
func (s *supervisor) forkedSpace(p *process, ep epoch) (*attribute.Space, *sealedCode) {
	if !ep.stable() {
		return nil, nil
	}
	ppid, err := parentOf(p.tgid)
	if err != nil {
		return nil, nil
	}
	s.mu.Lock()
	parent := s.procs[ppid]
	s.mu.Unlock()
	if parent == nil || parent == p || !parent.mu.TryLock() {
		return nil, nil
	}
	defer parent.mu.Unlock()
	if parent.exited() {
		return nil, nil
	}
	if parent.space == nil && readEpoch(parent.tgid, s.epochAt) == ep {
		// The parent's own space: its epoch page is read first, so
		// that a parent whose loader changed its objects since the
		// fork is not taken for the child's.
		if err := s.readOwnSpace(parent, ep); err != nil {
			return nil, nil
		}
	}
	if parent.space == nil || parent.epoch != ep {
		return nil, nil
	}
	return parent.space.Clone(), parent.code
}
