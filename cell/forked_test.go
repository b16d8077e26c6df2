package cell

import (
	"os"
	"os/exec"
	"testing"

	"github.com/syscell/syscell/attribute"
)

// TestForkedSpace checks that a process takes a copy of its parent's
// mappings where its epoch page says nothing changed since the parent's
// were read, and reads its own otherwise.
func TestForkedSpace(t *testing.T) {
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer child.Process.Kill()
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
		got := s.forkedSpace(p, tt.ep)
		if (got != nil) != tt.want {
			t.Errorf("%s: copied %v, want %v", tt.name, got != nil, tt.want)
		}
		if got != nil && (got == space || len(got.Mappings()) != 1) {
			t.Errorf("%s: not a copy of the parent's mappings", tt.name)
		}
	}
}
