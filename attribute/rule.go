package attribute

import (
	"errors"
	"fmt"
	"io"

	"github.com/syscell/syscell/unwind"
)

// Result is the outcome of the rule for one system call.
type Result struct {
	// Object is the object the call belongs to: a file, or the anonymous
	// executable memory object. It is nil when the call belongs to the
	// runtime.
	Object *Object
	// StartUp marks a call of the runtime made while the dynamic loader
	// starts the program: the thread's outermost frame is the loader's
	// entry point, not the executable's. Such calls come before any of
	// the program's own code (constructors aside, whose calls are theirs).
	StartUp bool
	// Memory marks a call the runtime makes to manage its own memory
	// (housekeeping.go) on behalf of Caller, the object that called into the
	// runtime: the call is the runtime's (Object is nil).
	Memory bool
	Caller *Object
	// TailCall marks a call whose Object entered the runtime by a jump,
	// leaving no frame (tailcall.go): the innermost frame outside the
	// runtime is the caller of Object's function.
	TailCall bool
	// Frames is how many frames the unwind stepped out of.
	Frames int
	// StackBytes is how far above the stack pointer the unwind read.
	StackBytes int64
	// Inputs are the values the outcome depends on besides the entry
	// instruction pointer (see unwind.Cursor.Inputs).
	Inputs []unwind.Input
}

// Failure is a system call the rule could not attribute.
type Failure struct {
	// Object is the object of the frame the unwind stopped in, nil when
	// that frame's address lies in no known mapping.
	Object *Object
	// PC is that frame's call site.
	PC uint64
	// StackBytes is how far above the stack pointer the unwind read.
	StackBytes int64
	Err        error
}

// Error says where and why the call could not be attributed.
func (f *Failure) Error() string {
	where := "unmapped code"
	if f.Object != nil {
		where = f.Object.Path
	}
	return fmt.Sprintf("cannot attribute a call from %s at %#x: %v", where, f.PC, f.Err)
}

// Unwrap returns why the unwind failed.
func (f *Failure) Unwrap() error { return f.Err }

// Attribute applies the rule to a thread stopped at system call entry
// for call nr with registers regs and memory mem, in address space s.
// The error is a *Failure.
func Attribute(s *Space, nr uint32, regs *unwind.Regs, mem unwind.Memory) (*Result, error) {
	c := unwind.NewCursor(regs, mem, s)
	// wrapped says the code that called the system call's wrapper (the
	// second frame) is the runtime's; started that the frame below is
	// libc's __libc_start_main.
	wrapped, started := false, false
	for {
		site := c.CallSite()
		m, ok := s.Lookup(site)
		if !ok {
			return nil, failure(c, nil, fmt.Errorf("%#x: %w", site, ErrUnmapped))
		}
		owner, outermost, err := m.owner(site, started)
		switch {
		case err != nil:
			return nil, failure(c, m.Object, err)
		case owner != nil:
			if wrapped && runtimeMemory(nr, regs) {
				return memoryResult(c, owner, nr, regs), nil
			}
			if c.Depth() > 0 {
				if callee := s.tailCallee(m, site); callee != nil {
					r := result(c, callee)
					r.TailCall = true
					return r, nil
				}
			}
			return result(c, owner), nil
		case outermost:
			r := result(c, nil)
			r.StartUp = m.Object.Runtime
			return r, nil
		}
		if c.Depth() == 1 {
			wrapped = true
		}
		started = m.startsMain(site)
		err = c.Next()
		if errors.Is(err, unwind.ErrNoFDE) && c.Depth() == 0 {
			err = s.afterFDE(c, m)
		}
		if errors.Is(err, io.EOF) {
			return result(c, nil), nil
		}
		if err != nil {
			return nil, failure(c, m.Object, err)
		}
	}
}

// owner returns the object a frame at site in m makes the call belong to,
// or nil if the frame is the runtime's: then outermost says that the frame
// is where the thread's stack begins, so the call is the runtime's, and
// otherwise the unwind must go on. started says the frame called libc's
// __libc_start_main.
func (m *Mapping) owner(site uint64, started bool) (owner *Object, outermost bool, err error) {
	obj := m.Object
	if obj.Kind == AnonExec {
		return obj, false, nil
	}
	if obj.Err != nil {
		return unreadableOwner(obj, started)
	}
	if link, err := m.linkAddr(site); err == nil && obj.inEntry(link) {
		return nil, true, nil
	}
	if obj.Runtime {
		return nil, false, nil
	}
	return obj, false, nil
}

// afterFDE steps out of a system call whose syscall instruction lies just
// past the end of an FDE. glibc's clone and clone3 end their CFI there on
// purpose ("in the child the unwind info will be wrong"), right after
// "mov $nr, %eax". That mov leaves the stack alone, so in the parent the
// frame is as the FDE's last row describes it. The pattern is checked in
// the object's code, byte for byte; anything else stays a failure.
func (s *Space) afterFDE(c *unwind.Cursor, m *Mapping) error {
	notFound := fmt.Errorf("%#x: %w", c.CallSite(), unwind.ErrNoFDE)
	link, err := m.linkAddr(c.PC())
	if err != nil || link < 7 {
		return notFound
	}
	code, err := m.Object.code(link-7, 7)
	if err != nil || code[0] != 0xb8 || code[5] != 0x0f || code[6] != 0x05 {
		return notFound
	}
	t, err := s.objects.Table(m.Object)
	if err != nil {
		return err
	}
	fde, err := t.Find(link - 3)
	if err != nil || fde.End != link-2 {
		return notFound
	}
	row, err := unwind.RowIn(fde, fde.End-1)
	if err != nil {
		return err
	}
	return c.NextWithRow(&row)
}

func result(c *unwind.Cursor, obj *Object) *Result {
	return &Result{Object: obj, Frames: c.Depth(), StackBytes: stackBytes(c.Inputs()), Inputs: c.Inputs()}
}

func failure(c *unwind.Cursor, obj *Object, err error) *Failure {
	f := &Failure{Object: obj, PC: c.CallSite(), StackBytes: stackBytes(c.Inputs()), Err: err}
	var outside *unwind.StackLimit
	if errors.As(err, &outside) {
		f.StackBytes = max(f.StackBytes, outside.Need)
	}
	return f
}

// stackBytes returns how far above the stack pointer inputs reach.
func stackBytes(inputs []unwind.Input) int64 {
	var n int64
	for _, in := range inputs {
		if in.Kind == unwind.InputStack {
			n = max(n, in.Offset+8)
		}
	}
	return n
}
