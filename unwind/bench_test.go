package unwind_test

import (
	"debug/elf"
	"testing"

	"github.com/syscell/syscell/unwind"
)

const libc = "/lib/x86_64-linux-gnu/libc.so.6"

// BenchmarkLoad measures reading libc's CFI, once per object.
func BenchmarkLoad(b *testing.B) {
	f, err := elf.Open(libc)
	if err != nil {
		b.Skipf("SKIPPED: %v", err)
	}
	defer f.Close()
	for b.Loop() {
		if _, err := unwind.Load(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRow measures finding and interpreting the row of an address, as
// every frame of an unwind does: averaged over the last address of every
// FDE of libc, the farthest from the FDE's start.
func BenchmarkRow(b *testing.B) {
	f, err := elf.Open(libc)
	if err != nil {
		b.Skipf("SKIPPED: %v", err)
	}
	defer f.Close()
	table, err := unwind.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	var pcs []uint64
	for i := range table.Len() {
		fde, err := table.FDE(i)
		if err != nil {
			b.Fatal(err)
		}
		if fde.End > fde.Start {
			pcs = append(pcs, fde.End-1)
		}
	}
	i := 0
	for b.Loop() {
		if _, err := table.Row(pcs[i%len(pcs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
