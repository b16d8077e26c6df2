package policy

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/syscell/syscell/syscalls"
)

// vectors lists testdata files matching pattern, failing if there are none
// so that a test over them cannot pass by finding nothing.
func vectors(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test vectors match testdata/%s (err %v)", pattern, err)
	}
	return files
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t *testing.T, path string) *Policy {
	t.Helper()
	p, err := Parse(filepath.Base(path), readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sampleArgs are argument values around the constants the test policies
// compare with, and values whose low and high halves differ, which 32-bit
// ABIs must read modulo 2^32.
var sampleArgs = []uint64{
	0, 1, 2, 8, 37, 38, 39, 40, 41, 0x11, 0x10000, 0x20000, 0x20008,
	0x7e020000, 0xffffffff, 1<<32 | 38, 1<<32 | 0xffffffff, math.MaxUint64,
}

// verdictDiff describes the first call that a and b decide differently,
// over every syscall number of every ABI (and one past the last), the
// sample values in each of the first two arguments, and a foreign ABI; it
// returns "" when there is none. Each policy is resolved for its own
// Arches, or for all ABIs when it names none.
func verdictDiff(a, b *Policy) string {
	ra, rb := a.Resolve(archesOrAll(a)), b.Resolve(archesOrAll(b))
	const auditArchAArch64 = 0xc00000b7
	if va, vb := ra.Decide(auditArchAArch64, 0, [MaxArgs]uint64{}), rb.Decide(auditArchAArch64, 0, [MaxArgs]uint64{}); va != vb {
		return fmt.Sprintf("foreign ABI: %v vs %v", va, vb)
	}
	for _, arch := range syscalls.Arches {
		nrs := append(syscalls.Numbers(arch), syscalls.Max(arch)+1)
		for _, nr := range nrs {
			for _, v := range sampleArgs {
				for i := range 2 {
					var args [MaxArgs]uint64
					args[i] = v
					va := ra.Decide(arch.AuditArch(), nr, args)
					if vb := rb.Decide(arch.AuditArch(), nr, args); va != vb {
						name, _ := syscalls.Name(arch, nr)
						return fmt.Sprintf("%s %s(%#x) nr %#x args %#x: %v vs %v", arch, name, v, nr, args, va, vb)
					}
				}
			}
		}
	}
	return ""
}

func archesOrAll(p *Policy) []syscalls.Arch {
	if len(p.Arches) == 0 {
		return syscalls.Arches
	}
	return p.Arches
}

func TestVerdictDiffSeesDifferences(t *testing.T) {
	p := mustParse(t, "testdata/good_example.toml")
	q := mustParse(t, "testdata/good_example.toml")
	if d := verdictDiff(p, q); d != "" {
		t.Fatalf("a policy differs from itself: %s", d)
	}
	q.Rules[1].Conds = q.Rules[1].Conds[:1]
	if verdictDiff(p, q) == "" {
		t.Error("dropping socket's arg0 != 40 went unnoticed")
	}
	q = mustParse(t, "testdata/good_example.toml")
	q.BadArch = ActAllow
	if verdictDiff(p, q) == "" {
		t.Error("changing bad-arch went unnoticed")
	}
}
