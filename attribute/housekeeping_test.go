package attribute

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/unwind"
)

func TestRuntimeMemory(t *testing.T) {
	anon, file := uint64(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), uint64(unix.MAP_PRIVATE)
	rw, rx := uint64(unix.PROT_READ|unix.PROT_WRITE), uint64(unix.PROT_READ|unix.PROT_EXEC)
	tests := []struct {
		name        string
		nr          uint32
		prot, flags uint64
		want        bool
	}{
		{"brk", unix.SYS_BRK, 0, 0, true},
		{"munmap", unix.SYS_MUNMAP, 0, 0, true},
		{"mremap", unix.SYS_MREMAP, 0, 0, true},
		{"madvise", unix.SYS_MADVISE, 0, 0, true},
		{"anonymous heap", unix.SYS_MMAP, rw, anon, true},
		{"reserved heap", unix.SYS_MMAP, unix.PROT_NONE, anon | unix.MAP_NORESERVE, true},
		{"anonymous code", unix.SYS_MMAP, rx, anon, false},
		{"a file", unix.SYS_MMAP, rw, file, false},
		{"a file's code", unix.SYS_MMAP, rx, file, false},
		{"heap grows", unix.SYS_MPROTECT, rw, 0, true},
		{"code made", unix.SYS_MPROTECT, rx, 0, false},
		{"a file opened", unix.SYS_OPENAT, 0, 0, false},
		{"pkey_mprotect", unix.SYS_PKEY_MPROTECT, rw, 0, false},
	}
	for _, tt := range tests {
		regs := unwind.Regs{unwind.RDX: tt.prot, unwind.R10: tt.flags}
		if got := runtimeMemory(tt.nr, &regs); got != tt.want {
			t.Errorf("%s: runtime's memory %v, want %v", tt.name, got, tt.want)
		}
	}
}
