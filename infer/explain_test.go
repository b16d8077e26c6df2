package infer

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestExplain checks the paths Explain finds in this package's fixtures
// against testdata/explained.txt: for a compartment and a call, how the
// path ends and the fixtures' functions it goes through, in order.
func TestExplain(t *testing.T) {
	dir := ownFixtures(t)
	var calls []string
	forEachVector(t, "explained.txt", func(_ int, fields []string) { calls = append(calls, fields[1]) })
	whys, err := Explain(filepath.Join(dir, "main"), options(), sortStrings(calls))
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Why{}
	for _, w := range whys {
		comp := w.Compartment
		if comp != "[runtime]" {
			comp = filepath.Base(comp)
		}
		byKey[comp+" "+w.Call] = w
	}
	forEachVector(t, "explained.txt", func(n int, fields []string) {
		w, ok := byKey[fields[0]+" "+fields[1]]
		if ok != (fields[2] != "absent") {
			t.Errorf("explained.txt:%d: %s holds %s: %v, want %s", n, fields[0], fields[1], ok, fields[2])
			return
		}
		if !ok {
			return
		}
		var names []string
		for _, s := range w.Steps {
			names = append(names, token(s))
		}
		path := strings.Join(names, " -> ") + " => " + w.End
		if !strings.HasPrefix(w.End, ends[fields[2]]) {
			t.Errorf("explained.txt:%d: %s %s ends %q, want %s: %s", n, fields[0], fields[1], w.End, fields[2], path)
		}
		rest := names
		for _, want := range fields[3:] {
			i := slices.Index(rest, want)
			if i < 0 {
				t.Errorf("explained.txt:%d: %s %s: no step %s in order: %s", n, fields[0], fields[1], want, path)
				return
			}
			rest = rest[i+1:]
		}
	})
}

// token is how explained.txt names a step: a function by the name its
// object exports it by, a pool as pool:KIND.
func token(s Step) string {
	if s.Object == "" {
		kinds := [numPools]string{poolRuntime: "runtime", poolOther: "other", poolMangled: "mangled", poolLoader: "loader"}
		return "pool:" + kinds[slices.Index(poolNames[:], s.Name)]
	}
	if s.Name == "" {
		return s.String()
	}
	return s.Name
}

// ends are how explained.txt names the ways a path ends.
var ends = map[string]string{
	"syscall":  "syscall instruction at",
	"argument": "its argument",
	"none":     "no path found",
}
