//go:build linux

package record

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
	"github.com/syscell/syscell/unwind"
)

// TestSnapshotHoles checks that the parts of a snapshot's stack the
// kernel could not copy are never read as zeros, by an unwind or by a
// walk of the learnt paths, and that a call whose unwind needs one is
// reported as such, not as a copy too short.
func TestSnapshotHoles(t *testing.T) {
	const sp = 0x7ffd0f00
	e := &trace.Syscall{Regs: trace.PtRegs{SP: sp}, Stack: make([]byte, 0x1200), Holes: []trace.Hole{{Start: sp, End: 0x7ffd1000}}}
	stack := snapshotStack(e)
	if _, err := stack.Word(sp + 0xf8); !errors.Is(err, unwind.ErrStackHole) {
		t.Errorf("word in the hole: %v, want %v", err, unwind.ErrStackHole)
	}
	if _, err := stack.Word(sp + 0x100); err != nil {
		t.Errorf("word above the hole: %v", err)
	}
	read := snapshotReader(e)
	if _, ok := read(trace.StepStack, 0x10); ok {
		t.Error("a path step read the hole")
	}
	if _, ok := read(trace.StepStack, 0x100); !ok {
		t.Error("a path step could not read above the hole")
	}
	_, err := stack.Word(sp)
	why := reason(&attribute.Failure{Err: fmt.Errorf("return address: %w", err)})
	if strings.Contains(why, "--stack-bytes") || !strings.Contains(why, "could not be copied") {
		t.Errorf("a read in a hole is reported as %q", why)
	}
}
