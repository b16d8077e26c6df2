package sec_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func TestMain(m *testing.M) {
	filter.MaybeRunChild()
	os.Exit(m.Run())
}

// allowlist allows nrs on x86_64 and answers everything else with deny.
func allowlist(tb testing.TB, deny uint32, nrs ...uintptr) []bpf.Instruction {
	tb.Helper()
	var b bpf.Builder
	allow, other := b.NewLabel("allow"), b.NewLabel("other")
	b.Add(bpf.LoadAbs(bpf.OffsetArch))
	b.JumpIf(bpf.JmpJeq, unix.AUDIT_ARCH_X86_64, bpf.Next, other)
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	for _, nr := range nrs {
		b.JumpIf(bpf.JmpJeq, uint32(nr), allow, bpf.Next)
	}
	b.Bind(other)
	b.Add(bpf.Ret(deny))
	b.Bind(allow)
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	prog, err := b.Program()
	if err != nil {
		tb.Fatal(err)
	}
	return prog
}
