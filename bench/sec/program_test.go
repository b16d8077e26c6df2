package sec

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
)

// TestDefeatCache checks in the interpreter that the prefix leaves no call
// cacheable and changes no verdict, on a program that relies on A starting
// at 0.
func TestDefeatCache(t *testing.T) {
	prog := []bpf.Instruction{
		bpf.Jump(bpf.JmpJeq, 0, 0, 3),
		bpf.LoadAbs(bpf.OffsetNr),
		bpf.Jump(bpf.JmpJeq, unix.SYS_CLOSE, 1, 0),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
		bpf.Ret(unix.SECCOMP_RET_ERRNO | 9),
	}
	defeated, err := defeatCache(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []bpf.SeccompData{
		{Nr: unix.SYS_GETPID},
		{Nr: unix.SYS_CLOSE},
		{Nr: unix.SYS_GETPID, Args: [6]uint64{5: 0xffffffff_00000000}},
		{Nr: unix.SYS_CLOSE, Args: [6]uint64{5: 0x1_00000000}},
	} {
		want, err := bpf.Run(prog, &in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bpf.Run(defeated, &in)
		if err != nil {
			t.Fatal(err)
		}
		if got.Ret != want.Ret {
			t.Errorf("%+v: %#x behind the prefix, %#x alone", in, got.Ret, want.Ret)
		}
		if got.KernelCacheable {
			t.Errorf("%+v: still cacheable behind the prefix", in)
		}
	}
}
