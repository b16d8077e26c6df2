package filter_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/filter"
)

func TestMain(m *testing.M) {
	filter.MaybeRunChild()
	os.Exit(m.Run())
}

// rule answers the system call Nr with Ret.
type rule struct {
	Nr  uintptr
	Ret uint32
}

// program checks the architecture, answers each rule's call with its return
// value and allows the rest.
func program(tb testing.TB, rules ...rule) []bpf.Instruction {
	tb.Helper()
	var b bpf.Builder
	kill := b.NewLabel("kill")
	rets := make([]bpf.Label, len(rules))
	b.Add(bpf.LoadAbs(bpf.OffsetArch))
	b.JumpIf(bpf.JmpJeq, unix.AUDIT_ARCH_X86_64, bpf.Next, kill)
	b.Add(bpf.LoadAbs(bpf.OffsetNr))
	for i, r := range rules {
		rets[i] = b.NewLabel(fmt.Sprintf("ret for %d", r.Nr))
		b.JumpIf(bpf.JmpJeq, uint32(r.Nr), rets[i], bpf.Next)
	}
	b.Add(bpf.Ret(unix.SECCOMP_RET_ALLOW))
	for i, r := range rules {
		b.Bind(rets[i])
		b.Add(bpf.Ret(r.Ret))
	}
	b.Bind(kill)
	b.Add(bpf.Ret(unix.SECCOMP_RET_KILL_PROCESS))
	prog, err := b.Program()
	if err != nil {
		tb.Fatal(err)
	}
	return prog
}

func errno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

// fd turns a possibly negative descriptor into a system call argument.
func fd(n int) uintptr { return uintptr(n) }

// replyJSON is the reply of the test roles.
func replyJSON(reply []byte, v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	if len(b) > len(reply) {
		return 0, fmt.Errorf("reply of %d bytes does not fit in %d", len(b), len(reply))
	}
	return copy(reply, b), nil
}

// procStatus returns a field of /proc/self/status.
func procStatus(field string) (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if value, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(value), nil
		}
	}
	return "", fmt.Errorf("/proc/self/status has no %s", field)
}
