package filter_test

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

// Asking the kernel what a program decides, as an equivalence test does:
// every action that would stop the child becomes an errno first.
func ExampleChild_Probe() {
	prog := []bpf.Instruction{
		bpf.LoadAbs(bpf.OffsetNr),
		bpf.Jump(bpf.JmpJeq, unix.SYS_GETPID, 0, 1),
		bpf.Ret(unix.SECCOMP_RET_KILL_PROCESS),
		bpf.Ret(unix.SECCOMP_RET_ALLOW),
	}
	safe, errnoOf := filter.DistinctErrnos(prog)
	calls := []filter.Syscall{{Nr: unix.SYS_GETPID}, {Nr: unix.SYS_GETPPID}}
	results, err := filter.Child{}.Probe(context.Background(), safe, calls)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range results {
		fmt.Println(filter.ActionName(filter.Verdict(r, errnoOf)))
	}
}
