package attribute

import (
	"debug/elf"
	"testing"

	"github.com/syscell/syscell/unwind"
)

// libcrypto is the largest object a server's first attributed call
// reads: its CFI and its linkage are what that call waits for.
const libcrypto = "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"

func openBench(b *testing.B, path string) *elf.File {
	f, err := elf.Open(path)
	if err != nil {
		b.Skipf("SKIPPED: %v", err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkLinkage reads libcrypto's linkage, as the first tail-call
// check from a frame in it does: its exports, which every object's are
// read for, and its calls.
func BenchmarkLinkage(b *testing.B) {
	f := openBench(b, libcrypto)
	for b.Loop() {
		readCalls(f, readExports(f).syms)
	}
}

// BenchmarkExports reads libcrypto's exports, as the first tail-call
// check from a frame in any object does.
func BenchmarkExports(b *testing.B) {
	f := openBench(b, libcrypto)
	for b.Loop() {
		readExports(f)
	}
}

// BenchmarkTable reads libcrypto's CFI, as the first unwind through it
// does.
func BenchmarkTable(b *testing.B) {
	f := openBench(b, libcrypto)
	for b.Loop() {
		if _, err := unwind.Load(f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSlot looks up a GOT slot that no relocation of libcrypto
// binds, the longest scan, as a tail-call check of a call from a frame in
// it does once per call chain.
func BenchmarkSlot(b *testing.B) {
	f := openBench(b, libcrypto)
	c := readCalls(f, readExports(f).syms)
	for b.Loop() {
		if c.slot(1) != "" {
			b.Fatal("slot 1 bound")
		}
	}
}
