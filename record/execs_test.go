package record

import (
	"os"
	"testing"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/trace"
)

// TestGrant: a compartment's execs grant the programs they started: by
// their compartment, or, where the executable made no call of its own and
// has none, by its path if it is an ELF file; a script gets no grant (its
// interpreter is what the kernel executes).
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
	c.Name, c.Calls["write"] = "called", 1
	x := newExecs()
	for i, path := range []string{"/bin/called", exe, script} {
		x.call(i, caller)
		x.exec(&trace.Exec{OldTID: i, Filename: path})
	}
	x.grant(reg)
	from, _ := reg.get(caller)
	if !from.Execs["called"] || !from.Execs[exe] || len(from.Execs) != 2 {
		t.Errorf("execs granted %v, want called (by compartment) and %s (by path)", from.Execs, exe)
	}
}
