package syscalls

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// entry is one row of a generated table: a system call and its number as
// seccomp_data.nr carries it.
type entry struct {
	name string
	nr   uint32
}

// MaxPlausible bounds the bare numbers Resolve accepts. x86 numbers stay far
// below it (x32's own calls end at 547), so a larger one is a typo rather
// than a syscall newer than these tables.
const MaxPlausible = 1024

// abi indexes one generated table.
type abi struct {
	byName  map[string]uint32
	byNr    map[uint32]string
	names   []string // canonical, ascending by number
	numbers []uint32 // ascending
}

// abis index each table the first time it is asked about: a run of
// syscell asks about one or two of them, and indexing them all at
// initialization delayed every run's start (docs/PERFORMANCE.md,
// Programs).
var abis = indexAll()

func indexAll() []func() *abi {
	all := make([]func() *abi, len(tables))
	for a, t := range tables {
		all[a] = sync.OnceValue(func() *abi { return newABI(t) })
	}
	return all
}

// newABI indexes a table sorted by number. Where several names share a
// number, the first is the canonical name Name reports; all of them resolve,
// so that a policy may spell a call either way.
func newABI(t []entry) *abi {
	x := &abi{
		byName: make(map[string]uint32, len(t)),
		byNr:   make(map[uint32]string, len(t)),
	}
	for _, e := range t {
		x.byName[e.name] = e.nr
		if _, alias := x.byNr[e.nr]; alias {
			continue
		}
		x.byNr[e.nr] = e.name
		x.names = append(x.names, e.name)
		x.numbers = append(x.numbers, e.nr)
	}
	return x
}

// indexOf returns an empty index for an Arch outside Arches, so that every
// query about it simply finds nothing.
func indexOf(a Arch) *abi {
	if int(a) < len(abis) {
		return abis[a]()
	}
	return &abi{}
}

// Lookup returns the number of a system call on a, with the x32 bit set for
// x32.
func Lookup(a Arch, name string) (nr uint32, ok bool) {
	nr, ok = indexOf(a).byName[name]
	return nr, ok
}

// Name returns the canonical name of system call nr on a.
func Name(a Arch, nr uint32) (string, bool) {
	name, ok := indexOf(a).byNr[nr]
	return name, ok
}

// Names lists the canonical names of a's system calls, ascending by number.
func Names(a Arch) []string {
	return slices.Clone(indexOf(a).names)
}

// Numbers lists a's system call numbers in ascending order.
func Numbers(a Arch) []uint32 {
	return slices.Clone(indexOf(a).numbers)
}

// Max is the highest system call number defined on a, including the x32 bit
// for x32, or 0 for an unknown Arch.
func Max(a Arch) uint32 {
	nrs := indexOf(a).numbers
	if len(nrs) == 0 {
		return 0
	}
	return nrs[len(nrs)-1]
}

// Known reports whether name is a system call on any of the ABIs.
func Known(name string) bool {
	return slices.ContainsFunc(Arches, func(a Arch) bool {
		_, ok := Lookup(a, name)
		return ok
	})
}

// Resolve turns a policy's spelling of a system call into the number seccomp
// sees on a. It accepts a name, or a number in decimal or 0x-prefixed hex so
// that policies can name calls newer than these tables. A number must lie
// below MaxPlausible; on x32 it may carry the x32 bit, and gets it if bare.
func Resolve(a Arch, nameOrNumber string) (uint32, error) {
	s := nameOrNumber
	if s == "" {
		return 0, errors.New("empty syscall name")
	}
	if s[0] < '0' || s[0] > '9' {
		if nr, ok := Lookup(a, s); ok {
			return nr, nil
		}
		return 0, unknown(a, s)
	}
	n, err := parseNumber(s)
	if err != nil {
		return 0, fmt.Errorf("syscall number %q on %s: %w", s, a, err)
	}
	return plausible(a, n)
}

// parseNumber reads decimal or 0x-prefixed hex. strconv's base 0 is avoided
// because it reads a leading 0 as octal, which nobody means for a syscall.
func parseNumber(s string) (uint32, error) {
	base := 10
	if hex, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		s, base = hex, 16
	}
	n, err := strconv.ParseUint(s, base, 32)
	if err != nil {
		return 0, err.(*strconv.NumError).Err
	}
	return uint32(n), nil
}

func plausible(a Arch, n uint32) (uint32, error) {
	if a != X32 && n&X32Bit != 0 {
		return 0, fmt.Errorf("syscall number %#x on %s carries the x32 bit", n, a)
	}
	if n&^X32Bit >= MaxPlausible {
		return 0, fmt.Errorf("implausible syscall number %#x on %s (want below %d)", n, a, MaxPlausible)
	}
	if a == X32 {
		return n | X32Bit, nil
	}
	return n, nil
}

// unknown explains a failed lookup, pointing at the ABIs that do have the
// call, since the usual cause is a policy written for another one.
func unknown(a Arch, name string) error {
	var elsewhere []string
	for _, other := range Arches {
		if _, ok := Lookup(other, name); ok {
			elsewhere = append(elsewhere, other.String())
		}
	}
	if len(elsewhere) == 0 {
		return fmt.Errorf("unknown syscall %q on %s", name, a)
	}
	return fmt.Errorf("unknown syscall %q on %s (it exists on %s)", name, a, strings.Join(elsewhere, ", "))
}
