package compile

import (
	"errors"
	"fmt"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// explainTooLong turns the builder's length error into a policy error that
// points at the rules most responsible: those of the syscall with the most
// branches.
func explainTooLong(err error, r *policy.Resolved, n int) error {
	if !errors.Is(err, bpf.ErrTooLong) {
		return err
	}
	var worst []policy.Branch
	var name string
	for _, t := range r.Tables {
		for _, nr := range t.Numbers() {
			if b := t.Syscalls[nr]; len(b) > len(worst) {
				worst = b
				name, _ = syscalls.Name(t.Arch, nr)
			}
		}
	}
	msg := fmt.Sprintf("the compiled program has %d instructions; the kernel accepts at most %d", n, bpf.MaxInstructions)
	if len(worst) == 0 {
		return &policy.Error{Pos: policy.Pos{File: r.Source}, Msg: msg}
	}
	msg += fmt.Sprintf(" (the %d rules for %s, the first here, weigh most)", len(worst), name)
	return &policy.Error{Pos: worst[0].Pos, Msg: msg}
}
