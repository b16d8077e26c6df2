package cell

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapping is one line of /proc/PID/maps: its bounds and what maps
// names it (a file's path, "[heap]", or "" for anonymous memory).
type mapping struct {
	start, end uint64
	name       string
}

// procmapQuery is the kernel's struct procmap_query (Linux 6.11).
type procmapQuery struct {
	size, queryFlags, queryAddr                        uint64
	vmaStart, vmaEnd, vmaFlags, vmaPageSize, vmaOffset uint64
	inode                                              uint64
	devMajor, devMinor, vmaNameSize, buildIDSize       uint32
	vmaNameAddr, buildIDAddr                           uint64
}

// procmapQueryIoctl is _IOWR(PROCFS_IOCTL_MAGIC, 17, struct procmap_query).
const procmapQueryIoctl = 3<<30 | uint(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17

// errNoQuery says the kernel has no PROCMAP_QUERY.
var errNoQuery = errors.New("no PROCMAP_QUERY")

// mappingAt is the mapping of process pid that holds addr. The kernel
// finds it for one ioctl (PROCMAP_QUERY); an older one has the whole of
// maps printed and read, which in a process that has just loaded its
// libraries took the supervisor a tenth of a millisecond per exec.
func mappingAt(pid int, addr uint64) (mapping, bool, error) {
	path := fmt.Sprintf("/proc/%d/maps", pid)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return mapping{}, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	m, ok, err := queryMapping(fd, addr)
	if errors.Is(err, errNoQuery) {
		return readMapping(fd, path, addr)
	}
	return m, ok, err
}

// queryMapping asks the kernel for the mapping that holds addr.
func queryMapping(fd int, addr uint64) (mapping, bool, error) {
	var name [unix.PathMax]byte
	q := procmapQuery{queryAddr: addr, vmaNameSize: uint32(len(name)), vmaNameAddr: uint64(uintptr(unsafe.Pointer(&name[0])))}
	q.size = uint64(unsafe.Sizeof(q))
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(procmapQueryIoctl), uintptr(unsafe.Pointer(&q)))
	switch errno {
	case 0:
	case unix.ENOENT:
		return mapping{}, false, nil
	case unix.ENOTTY, unix.EINVAL:
		return mapping{}, false, errNoQuery
	default:
		return mapping{}, false, fmt.Errorf("query the mapping at %#x: %w", addr, errno)
	}
	m := mapping{start: q.vmaStart, end: q.vmaEnd}
	if q.vmaNameSize > 0 {
		m.name = unix.ByteSliceToString(name[:q.vmaNameSize])
	}
	return m, true, nil
}

// readMapping finds the mapping that holds addr in maps, open at fd.
func readMapping(fd int, path string, addr uint64) (mapping, bool, error) {
	b, err := readFrom(fd, path)
	if err != nil {
		return mapping{}, false, err
	}
	for line := range strings.Lines(string(b)) {
		var m mapping
		var perm, offset, dev, inode string
		if _, err := fmt.Sscanf(line, "%x-%x %s %s %s %s", &m.start, &m.end, &perm, &offset, &dev, &inode); err != nil {
			return mapping{}, false, fmt.Errorf("%s: line %q: %w", path, line, err)
		}
		if addr < m.start || addr >= m.end {
			continue
		}
		if f := strings.Fields(line); len(f) > 5 {
			m.name = strings.Join(f[5:], " ")
		}
		return m, true, nil
	}
	return mapping{}, false, nil
}
