package x86

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestChoices assembles each function of testdata/choices.txtar (NAME.s,
// whose function f is read) and compares what Choices finds, path by
// path, with NAME.want.
func TestChoices(t *testing.T) {
	if _, err := exec.LookPath("as"); err != nil {
		t.Skipf("SKIPPED: no assembler (binutils) to build the test functions: %v", err)
	}
	ar, err := txtar.ParseFile(filepath.Join("testdata", "choices.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		name, ok := strings.CutSuffix(f.Name, ".s")
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := findFile(ar, name+".want")
			if want == nil {
				t.Fatalf("no %s.want", name)
			}
			if got := choices(t, name, f.Data); got != string(want.Data) {
				t.Errorf("choices differ\n--- got\n%s--- want\n%s", got, want.Data)
			}
		})
	}
}

// choices assembles src and dumps the choices of its function f.
func choices(t *testing.T, name string, src []byte) string {
	a := assemble(t, name, src)
	out, ok := Decode(a.code, a.entry).Choices(a.entry, a.env)
	if !ok {
		return "none\n"
	}
	var b strings.Builder
	for _, c := range out {
		null := make([]string, len(c.Null))
		for i, v := range c.Null {
			null[i] = valueString(v, a.names)
		}
		fmt.Fprintf(&b, "choice %s null=[%s]\n", valueString(c.Result, a.names), strings.Join(null, ", "))
	}
	return b.String()
}
