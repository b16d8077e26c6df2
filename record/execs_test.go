package record

import (
	"os"
	"testing"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
)

// TestGrant: a compartment's execs grant the compartments of the programs
// they started, those whose executable made no call of its own included
// (they get a compartment with no calls); a file that is no ELF program
// gets none.
func TestGrant(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := t.TempDir() + "/script"
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry()
	caller := reg.id(&attribute.Result{Object: &attribute.Object{Path: "/bin/caller"}})
	called := reg.id(&attribute.Result{Object: &attribute.Object{Path: "/bin/called"}})
	c, _ := reg.get(called)
	c.Calls["write"] = 1
	x := newExecs()
	for i, path := range []string{"/bin/called", exe, script} {
		x.call(i, caller)
		x.exec(&trace.Exec{OldTID: i, Filename: path})
	}
	granted := x.grant(reg)
	from, _ := reg.get(caller)
	if !from.Execs["/bin/called"] || !from.Execs[exe] || from.Execs[script] || len(from.Execs) != 2 {
		t.Errorf("execs granted %v, want /bin/called and %s", from.Execs, exe)
	}
	if len(granted) != 2 {
		t.Errorf("%d compartments granted, want 2", len(granted))
	}
	for g := range granted {
		if g.Path == exe && (len(g.Calls) != 0 || g.BuildID != attributeBuildID(t, exe)) {
			t.Errorf("the call-less program's compartment: %+v", g)
		}
	}
}

func attributeBuildID(t *testing.T, path string) string {
	t.Helper()
	id, err := attribute.FileBuildID(path)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
