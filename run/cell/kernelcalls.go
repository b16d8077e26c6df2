package cell

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/run/cell/kcount"
	"github.com/syscell/syscell/syscalls"
)

// KernelCalls counts calls the kernel let run, of one syscall, by the
// code that made them (package kcount, Options.CountKernel): a
// compartment's stubs or code, the runtime's code (calls allowed by number
// in the kernel, and those the supervisor continued) or code the layout
// does not know.
type KernelCalls struct {
	Owner   string `json:"owner"`
	Syscall string `json:"syscall"`
	Calls   uint64 `json:"calls"`
}

// Owners of code that is no compartment's, as KernelCalls name them.
const (
	OwnerRuntimeCode = "[runtime code]"
	OwnerOtherCode   = "[other code]"
)

// kernelCounter counts a program's calls by the code of its layout.
type kernelCounter struct {
	c      *kcount.Counter
	owners []string
}

// countKernel starts counting the calls of process tgid by the code of
// layout l.
func countKernel(tgid int, l compartment.Layout) (*kernelCounter, error) {
	owners := append(slices.Clone(l.Slots), OwnerRuntimeCode, OwnerOtherCode)
	runtime, other := uint32(len(l.Slots)), uint32(len(l.Slots)+1)
	var ranges []kcount.Range
	for i := range l.Slots {
		start := l.Window + uint64(i)<<l.SlotShift
		ranges = append(ranges, kcount.Range{Start: start, End: start + 1<<l.SlotShift, Owner: uint32(i)})
	}
	for i, name := range l.Slots {
		for _, r := range l.Text[name] {
			ranges = append(ranges, kcount.Range{Start: r.Start, End: r.End, Owner: uint32(i)})
		}
	}
	for _, r := range l.Runtime {
		ranges = append(ranges, kcount.Range{Start: r.Start, End: r.End, Owner: runtime})
	}
	c, err := kcount.Start(tgid, ranges, other)
	if err != nil {
		return nil, err
	}
	return &kernelCounter{c: c, owners: owners}, nil
}

// stop stops counting and returns the counts, sorted by owner and
// syscall.
func (k *kernelCounter) stop() ([]KernelCalls, error) {
	defer k.c.Close()
	counts, err := k.c.Counts()
	if err != nil {
		return nil, err
	}
	var out []KernelCalls
	for key, n := range counts {
		name, ok := syscalls.Name(syscalls.X86_64, key.Nr)
		if !ok {
			name = "#" + strconv.FormatUint(uint64(key.Nr), 10)
		}
		out = append(out, KernelCalls{Owner: k.owners[key.Owner], Syscall: name, Calls: n})
	}
	slices.SortFunc(out, func(a, b KernelCalls) int {
		return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Syscall, b.Syscall))
	})
	return out, nil
}
