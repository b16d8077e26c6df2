package syscalls

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
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

// tableOf returns a's table of ts, or none for an Arch outside Arches,
// so that every query about it simply finds nothing.
func tableOf(ts [][]entry, a Arch) []entry {
	if int(a) < len(ts) {
		return ts[a]
	}
	return nil
}

// Lookup returns the number of a system call on a, with the x32 bit set for
// x32.
func Lookup(a Arch, name string) (nr uint32, ok bool) {
	return lookup(tableOf(byName[:], a), name)
}

// lookup finds name in t, ascending by name.
func lookup(t []entry, name string) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(t, name, func(e entry, name string) int { return strings.Compare(e.name, name) })
	if !ok {
		return 0, false
	}
	return t[i].nr, true
}

// Name returns the canonical name of system call nr on a: the first of
// the names that share its number.
func Name(a Arch, nr uint32) (string, bool) {
	return nameOf(tableOf(tables[:], a), nr)
}

// nameOf finds the first name of nr in t, ascending by number.
func nameOf(t []entry, nr uint32) (string, bool) {
	i, ok := slices.BinarySearchFunc(t, nr, func(e entry, nr uint32) int { return cmp.Compare(e.nr, nr) })
	if !ok {
		return "", false
	}
	return t[i].name, true
}

// canonical yields the entries of t, ascending by number, that name a
// number first.
func canonical(t []entry) iter.Seq[entry] {
	return func(yield func(entry) bool) {
		for i, e := range t {
			if i > 0 && t[i-1].nr == e.nr {
				continue
			}
			if !yield(e) {
				return
			}
		}
	}
}

// Names lists the canonical names of a's system calls, ascending by number.
func Names(a Arch) []string {
	var names []string
	for e := range canonical(tableOf(tables[:], a)) {
		names = append(names, e.name)
	}
	return names
}

// Numbers lists a's system call numbers in ascending order.
func Numbers(a Arch) []uint32 {
	var nrs []uint32
	for e := range canonical(tableOf(tables[:], a)) {
		nrs = append(nrs, e.nr)
	}
	return nrs
}

// Max is the highest system call number defined on a, including the x32 bit
// for x32, or 0 for an unknown Arch.
func Max(a Arch) uint32 {
	t := tableOf(tables[:], a)
	if len(t) == 0 {
		return 0
	}
	return t[len(t)-1].nr
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
