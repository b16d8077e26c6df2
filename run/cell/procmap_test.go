package cell

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/notify"
	"github.com/syscell/syscell/syscalls"
)

// TestUnmapsLoaderCache maps the loader's cache and another file, and
// checks which munmaps unmap exactly the cache, through the kernel's
// query and through maps.
func TestUnmapsLoaderCache(t *testing.T) {
	cache, cacheSize := mapFile(t, loaderCache)
	other, otherSize := mapFile(t, "/etc/passwd")
	if q, err := os.Open("/proc/self/maps"); err == nil {
		if _, _, err := queryMapping(int(q.Fd()), cache); err != nil {
			t.Logf("THIS KERNEL HAS NO PROCMAP_QUERY (Linux 6.11): %v", err)
		}
		q.Close()
	}
	for _, tc := range []struct {
		name        string
		start, size uint64
		want        bool
	}{
		{"the cache", cache, cacheSize, true},
		{"the cache, by its length", cache, cacheSize - cacheSize%pageSize + 1, cacheSize%pageSize != 0},
		{"part of the cache", cache, pageSize, cacheSize <= pageSize},
		{"another file", other, otherSize, false},
		{"nothing mapped", 0x1000, pageSize, false},
		{"no length", cache, 0, false},
	} {
		n := &notify.Notification{Pid: os.Getpid()}
		n.Data.Arch, n.Data.Nr = syscalls.AuditArchX86_64, unix.SYS_MUNMAP
		n.Data.Args[0], n.Data.Args[1] = tc.start, tc.size
		if got := unmapsLoaderCache(n); got != tc.want {
			t.Errorf("%s: unmapsLoaderCache = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, addr := range []uint64{cache, other, 0x1000} {
		fd, err := unix.Open("/proc/self/maps", unix.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		read, okRead, errRead := readMapping(fd, "maps", addr)
		unix.Close(fd)
		asked, okAsked, errAsked := mappingAt(os.Getpid(), addr)
		if read != asked || okRead != okAsked || errRead != nil || errAsked != nil {
			t.Errorf("mapping at %#x: read %+v, %v, %v; asked %+v, %v, %v", addr, read, okRead, errRead, asked, okAsked, errAsked)
		}
	}
}

// mapFile maps the file at path and returns where, and its size.
func mapFile(t *testing.T, path string) (uint64, uint64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		t.Skipf("%s: %v", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, len(b), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return uint64(uintptr(unsafe.Pointer(&m[0]))), uint64(len(b))
}
