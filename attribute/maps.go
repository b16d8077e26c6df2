package attribute

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MapsEntry is one line of /proc/PID/maps.
type MapsEntry struct {
	Start, End, Offset uint64
	// Perms is the protection and sharing, as "r-xp".
	Perms string
	// Dev is the device of the mapped file as stat reports it, Ino its
	// inode; both are zero for anonymous memory.
	Dev, Ino uint64
	// Path is the file's path, or a name such as "[vdso]" or "[stack]",
	// or "".
	Path string
}

// Exec says whether the mapping is executable.
func (e *MapsEntry) Exec() bool { return len(e.Perms) > 2 && e.Perms[2] == 'x' }

// ParseMaps reads /proc/PID/maps text.
func ParseMaps(r io.Reader) ([]MapsEntry, error) {
	var entries []MapsEntry
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		e, err := parseMapsLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		entries = append(entries, e)
	}
	return entries, sc.Err()
}

// parseMapsLine reads "start-end perms offset major:minor inode   path",
// where the path may hold spaces.
func parseMapsLine(line string) (MapsEntry, error) {
	var e MapsEntry
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return e, fmt.Errorf("%q: too few fields", line)
	}
	start, end, ok := strings.Cut(fields[0], "-")
	major, minor, ok2 := strings.Cut(fields[3], ":")
	if !ok || !ok2 {
		return e, fmt.Errorf("%q: malformed range or device", line)
	}
	var err error
	nums := []struct {
		dst  *uint64
		s    string
		base int
	}{{&e.Start, start, 16}, {&e.End, end, 16}, {&e.Offset, fields[2], 16}, {&e.Ino, fields[4], 10}}
	for _, n := range nums {
		if *n.dst, err = strconv.ParseUint(n.s, n.base, 64); err != nil {
			return e, fmt.Errorf("%q: %w", line, err)
		}
	}
	ma, err1 := strconv.ParseUint(major, 16, 32)
	mi, err2 := strconv.ParseUint(minor, 16, 32)
	if err1 != nil || err2 != nil {
		return e, fmt.Errorf("%q: malformed device", line)
	}
	e.Perms, e.Dev = fields[1], unix.Mkdev(uint32(ma), uint32(mi))
	e.Path = mapsPath(line, fields)
	return e, nil
}

// mapsPath returns what follows the inode field, spaces included.
func mapsPath(line string, fields []string) string {
	if len(fields) == 5 {
		return ""
	}
	rest := line
	for _, f := range fields[:5] {
		rest = strings.TrimLeft(rest, " ")
		rest = rest[len(f):]
	}
	return strings.TrimLeft(rest, " ")
}

// ReadSpace builds the address space of the live process pid from its
// /proc/PID/maps, reading files through /proc/PID/map_files when their
// path no longer leads to them.
func ReadSpace(pid int, objs *Objects) (*Space, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := ParseMaps(f)
	if err != nil {
		return nil, fmt.Errorf("/proc/%d/maps: %w", pid, err)
	}
	s := NewSpace(objs)
	for _, e := range entries {
		if obj := entryObject(pid, &e, objs); obj != nil {
			s.Map(Mapping{Start: e.Start, End: e.End, Offset: e.Offset, Object: obj})
		}
	}
	return s, nil
}

// entryObject returns the object of an executable mapping, or nil for a
// mapping that holds no code.
func entryObject(pid int, e *MapsEntry, objs *Objects) *Object {
	switch {
	case !e.Exec(), e.Path == "[vsyscall]", e.Path == "[uprobes]":
		// The kernel emulates the legacy vsyscall page and uprobes'
		// instruction slots: no system call is entered from them.
		return nil
	case e.Path == "[vdso]":
		return objs.VDSO()
	case e.Ino == 0:
		return AnonExecObject()
	}
	mapFile := fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, e.Start, e.End)
	return objs.File(e.Dev, e.Ino, strings.TrimSuffix(e.Path, " (deleted)"), mapFile)
}
