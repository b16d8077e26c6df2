package privilege

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

func TestDiffVectors(t *testing.T) {
	for name, v := range readVectors(t, "diff") {
		old, new := diffInputs(t, name, v.inputs)
		for rname, want := range v.wants {
			r := loadRanking(t, rname)
			if got := renderDiff(Compare(old.Score(r), new.Score(r))); got != want {
				t.Errorf("%s, %s:\ngot:\n%swant:\n%s", name, rname, got, want)
			}
		}
	}
}

// diffInputs finds a diff vector's old.* and new.* files.
func diffInputs(t *testing.T, name string, files []txtar.File) (old, new *Allowlists) {
	t.Helper()
	for _, f := range files {
		switch {
		case strings.HasPrefix(f.Name, "old."):
			old = parse(t, f)
		case strings.HasPrefix(f.Name, "new."):
			new = parse(t, f)
		}
	}
	if old == nil || new == nil || len(files) != 2 {
		t.Fatalf("%s: want an old.* and a new.* file, and nothing else", name)
	}
	return old, new
}

// renderDiff writes what a diff vector expects: per compartment, then for
// the union, "NAME: OLD -> NEW (CHANGE) +ADDED... -REMOVED...", with "-" for
// a file without the compartment, then the application's figures.
func renderDiff(d Diff) string {
	var b strings.Builder
	for _, c := range append(d.Compartments, d.Union) {
		fmt.Fprintf(&b, "%s: %s -> %s (%+d)", c.Name(), privilegeText(c.Old), privilegeText(c.New), c.Delta())
		for _, name := range c.Added {
			b.WriteString(" +" + name)
		}
		for _, name := range c.Removed {
			b.WriteString(" -" + name)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "P_A: %d -> %d (%+d)\n", d.Old.App(), d.New.App(), d.New.App()-d.Old.App())
	fmt.Fprintf(&b, "P_seccomp: %d -> %d (%+d)\n", d.Old.Seccomp(), d.New.Seccomp(), d.New.Seccomp()-d.Old.Seccomp())
	fmt.Fprintf(&b, "reduction: %.2f%% -> %.2f%%\n", d.Old.Reduction(), d.New.Reduction())
	if !d.Phased() {
		return b.String()
	}
	for _, c := range append(d.Compartments, d.Union) {
		fmt.Fprintf(&b, "%s serving: %s -> %s (%+d)", c.Name(), servingText(c.Old), servingText(c.New), c.ServingDelta())
		for _, name := range c.ServingAdded {
			b.WriteString(" +" + name)
		}
		for _, name := range c.ServingRemoved {
			b.WriteString(" -" + name)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "P_A serving: %d -> %d (%+d)\n", d.Old.AppServing(), d.New.AppServing(), d.New.AppServing()-d.Old.AppServing())
	fmt.Fprintf(&b, "P_seccomp serving: %d -> %d (%+d)\n", d.Old.SeccompServing(), d.New.SeccompServing(),
		d.New.SeccompServing()-d.Old.SeccompServing())
	fmt.Fprintf(&b, "serving reduction: %.2f%% -> %.2f%%\n", d.Old.ServingReduction(), d.New.ServingReduction())
	fmt.Fprintf(&b, "phased reduction: %.2f%% -> %.2f%%\n", d.Old.PhasedReduction(), d.New.PhasedReduction())
	return b.String()
}

func privilegeText(s *Scored) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprint(s.Privilege)
}

func servingText(s *Scored) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprint(s.ServingPrivilege)
}

// TestMatches checks the matching rule on its own: build-ids decide when
// both compartments have one, paths (or, without a path, names) otherwise.
func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		a, b Compartment
		want bool
	}{
		{Compartment{Name: "x", Path: "/a", BuildID: "01"}, Compartment{Name: "y", Path: "/b", BuildID: "01"}, true},
		{Compartment{Name: "x", Path: "/a", BuildID: "01"}, Compartment{Name: "x", Path: "/a", BuildID: "02"}, false},
		{Compartment{Name: "x", Path: "/a", BuildID: "01"}, Compartment{Name: "y", Path: "/a"}, true},
		{Compartment{Name: "x", Path: "/a"}, Compartment{Name: "x", Path: "/b"}, false},
		{Compartment{Name: "/a"}, Compartment{Name: "liba", Path: "/a"}, true}, // syso's key against a policy's path
		{Compartment{Name: "liba"}, Compartment{Name: "liba"}, true},
		{Compartment{Name: "liba"}, Compartment{Name: "liba", Path: "/a"}, false},
	} {
		if got := matches(tc.a, tc.b); got != tc.want {
			t.Errorf("matches(%+v, %+v) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
	}
}
