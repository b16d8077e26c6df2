package attribute

import "debug/elf"

// An object whose file cannot be read (deleted while the program ran, on
// a mount gone since; the recorder, which reads files after the fact, can
// find a short-lived process gone with its /proc/PID/map_files) has no
// soname, entry point or CFI for the rule. It need not: a frame in an
// object outside the runtime ends the unwind, so its CFI is never needed,
// and what remains to know is whether the object is the runtime, and
// whether the frame is the entry function of an executable, where every
// stack begins. The runtime's files are named by their sonames (Debian's
// libc.so.6, ld-linux-x86-64.so.2), which Objects.File takes for the
// soname of an unreadable object; and an executable's entry function is
// the frame that called libc's __libc_start_main, which only crt1's
// _start does. An unreadable runtime object stays unattributable: the
// unwind would have to pass through it.

// startMainSymbol is the function of libc every executable's entry point
// calls.
const startMainSymbol = "__libc_start_main"

// unreadableOwner is Mapping.owner for an object whose file could not be
// read.
func unreadableOwner(obj *Object, started bool) (*Object, bool, error) {
	switch {
	case obj.Runtime:
		return nil, false, obj.Err
	case started:
		return nil, true, nil
	}
	return obj, false, nil
}

// startsMain says whether site, in m, lies in libc's __libc_start_main.
func (m *Mapping) startsMain(site uint64) bool {
	r := m.Object.startMain
	if r[1] == 0 {
		return false
	}
	link, err := m.linkAddr(site)
	return err == nil && link >= r[0] && link < r[1]
}

// symbolRange is the link-time range of the dynamic function symbol name
// of f, zero if f does not define it.
func symbolRange(f *elf.File, name string) [2]uint64 {
	d := readDynsyms(f)
	i, ok := -1, false
	if hash := f.Section(".gnu.hash"); hash != nil {
		if data, err := hash.Data(); err == nil && d.hashable(data) {
			i, ok = d.lookup(data, name)
		}
	}
	if i < 0 {
		i, ok = d.inMemory().find(name)
	}
	if !ok || !d.function(i) {
		return [2]uint64{}
	}
	value, size := d.extent(i)
	if size == 0 {
		return [2]uint64{}
	}
	return [2]uint64{value, value + size}
}
