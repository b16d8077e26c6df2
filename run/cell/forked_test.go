package cell

import (
	"encoding/binary"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"unsafe"

	"github.com/syscell/syscell/attribute"
)

// sleeper starts a child that lives as long as the test.
func sleeper(t *testing.T) *exec.Cmd {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		child.Process.Kill()
		child.Wait()
	})
	return child
}

// TestForkedSpace checks that a process takes a copy of its parent's
// mappings where its epoch page says nothing changed since the parent's
// were read, and reads its own otherwise.
func TestForkedSpace(t *testing.T) {
	child := sleeper(t)
	objs := attribute.NewObjects(attribute.DefaultRuntime())
	space := attribute.NewSpace(objs)
	space.Map(attribute.Mapping{Start: 0x1000, End: 0x2000, Object: attribute.AnonExecObject()})
	stable := epoch{cookie: 7, count: 2, ok: true}
	parentPidfd, err := pidfdOpen(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	parent := &process{tgid: os.Getpid(), pidfd: parentPidfd, space: space, epoch: stable}
	defer parent.close()
	s := &supervisor{procs: map[int]*process{os.Getpid(): parent}}
	p := &process{tgid: child.Process.Pid}
	for _, tt := range []struct {
		name string
		ep   epoch
		want bool
	}{
		{"as the parent's", stable, true},
		{"the loader changing objects", epoch{cookie: 7, count: 3, ok: true}, false},
		{"changed since", epoch{cookie: 7, count: 4, ok: true}, false},
		{"another image", epoch{cookie: 8, count: 2, ok: true}, false},
		{"no epoch page", epoch{}, false},
	} {
		got, _ := s.forkedSpace(p, tt.ep)
		if (got != nil) != tt.want {
			t.Errorf("%s: copied %v, want %v", tt.name, got != nil, tt.want)
		}
		if got != nil && (got == space || len(got.Mappings()) != 1) {
			t.Errorf("%s: not a copy of the parent's mappings", tt.name)
		}
	}
}

// TestForkedSpaceReadsParent checks that a parent whose mappings were
// never read (a shell whose own calls the kernel decides) has them read
// for its first child, once, where its epoch page holds the child's;
// and that a parent whose page holds another is left alone.
func TestForkedSpaceReadsParent(t *testing.T) {
	child := sleeper(t)
	page := new([16]byte)
	binary.LittleEndian.PutUint64(page[:], 7)
	binary.LittleEndian.PutUint64(page[8:], 2)
	stable := epoch{cookie: 7, count: 2, ok: true}
	for _, tt := range []struct {
		name string
		ep   epoch
		want bool
	}{
		{"as the parent's page", stable, true},
		{"the parent's page changed since the fork", epoch{cookie: 7, count: 4, ok: true}, false},
	} {
		pidfd, err := pidfdOpen(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		parent := &process{tgid: os.Getpid(), pidfd: pidfd}
		s := &supervisor{procs: map[int]*process{os.Getpid(): parent},
			objs: attribute.NewObjects(attribute.DefaultRuntime()), epochAt: uint64(uintptr(unsafe.Pointer(page)))}
		got, code := s.forkedSpace(&process{tgid: child.Process.Pid}, tt.ep)
		if (got != nil) != tt.want || (parent.space != nil) != tt.want {
			t.Errorf("%s: copied %v, parent's read %v, want %v", tt.name, got != nil, parent.space != nil, tt.want)
		}
		if got != nil && (got == parent.space || len(got.Mappings()) == 0 || parent.epoch != tt.ep || code == nil || code != parent.code) {
			t.Errorf("%s: not a copy of the parent's mappings at its epoch", tt.name)
		}
		parent.close()
	}
	runtime.KeepAlive(page)
}
