package secbench_test

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func TestMain(m *testing.M) {
	filter.MaybeRunChild()
	os.Exit(m.Run())
}

// requireSeccomp skips, saying why, where the kernel cannot run the tests.
func requireSeccomp(tb testing.TB) {
	tb.Helper()
	if runtime.GOARCH != "amd64" {
		tb.Skipf("SKIPPED: secbench measures x86_64 system calls, this is %s", runtime.GOARCH)
	}
	err := filter.Supported()
	if errors.Is(err, filter.ErrNotSupported) {
		tb.Skipf("SKIPPED: this kernel cannot install seccomp filters: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
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
