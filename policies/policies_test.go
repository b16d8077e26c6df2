package policies_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/compile"
	"github.com/syscell/syscell/policies"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// host fixes what runtime-default's conditional entries are resolved for.
var host = policy.OCIOptions{Kernel: "6.18"}

func TestNames(t *testing.T) {
	want := []string{"deny-dangerous", "runtime-default"}
	if got := policies.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	for _, name := range want {
		if !policies.Known(name) {
			t.Errorf("Known(%q) = false", name)
		}
	}
	for _, name := range []string{"", "runtime-default.json", "nonexistent", "../policy"} {
		if policies.Known(name) {
			t.Errorf("Known(%q) = true", name)
		}
	}
}

func TestLoadUnknown(t *testing.T) {
	_, _, err := policies.Load("nonexistent", host)
	if err == nil || !strings.Contains(err.Error(), `no bundled policy "nonexistent" (want one of deny-dangerous, runtime-default)`) {
		t.Errorf("Load(nonexistent): %v", err)
	}
}

// TestRuntimeDefaultIsDockers keeps the bundled profile the one whose import
// package policy tests.
func TestRuntimeDefaultIsDockers(t *testing.T) {
	bundled, err := os.ReadFile("runtime-default.json")
	if err != nil {
		t.Fatal(err)
	}
	tested, err := os.ReadFile("../policy/testdata/docker-default.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bundled, tested) {
		t.Error("runtime-default.json differs from policy/testdata/docker-default.json: update both")
	}
}

// TestVerdicts checks testdata/verdicts.txt against each policy's own
// semantics and against its compiled program.
func TestVerdicts(t *testing.T) {
	progs := map[string]*compiled{}
	for _, v := range readVerdicts(t) {
		c, ok := progs[v.policy]
		if !ok {
			c = compilePolicy(t, v.policy)
			progs[v.policy] = c
		}
		nr, ok := syscalls.Lookup(v.arch, v.syscall)
		if !ok {
			t.Fatalf("%s: no %s syscall %q", v.line, v.arch, v.syscall)
		}
		in := bpf.SeccompData{Nr: nr, Arch: v.arch.AuditArch()}
		if got := c.r.Decide(in.Arch, in.Nr, in.Args).String(); got != v.want {
			t.Errorf("%s: policy decides %s, want %s", v.line, got, v.want)
		}
		res, err := bpf.Run(c.prog, &in)
		if err != nil {
			t.Fatal(err)
		}
		if got := policy.ActionFromRet(res.Ret).String(); got != v.want {
			t.Errorf("%s: program returns %s, want %s", v.line, got, v.want)
		}
	}
	if len(progs) != len(policies.Names()) {
		t.Errorf("verdicts cover %d of the %d bundled policies", len(progs), len(policies.Names()))
	}
}

type compiled struct {
	r    *policy.Resolved
	prog []bpf.Instruction
}

func compilePolicy(t *testing.T, name string) *compiled {
	t.Helper()
	p, _, err := policies.Load(name, host)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Arches) != len(syscalls.Arches) {
		t.Errorf("%s covers %v, want every x86 ABI", name, p.Arches)
	}
	r := p.Resolve(p.Arches)
	prog, err := compile.Compile(r, compile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &compiled{r, prog}
}

type verdict struct {
	line    string
	policy  string
	arch    syscalls.Arch
	syscall string
	want    string
}

func readVerdicts(t *testing.T) []verdict {
	t.Helper()
	f, err := os.Open("testdata/verdicts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []verdict
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 4 {
			t.Fatalf("verdicts.txt:%d: want POLICY ABI SYSCALL VERDICT", n)
		}
		a, err := syscalls.ParseArch(fields[1])
		if err != nil {
			t.Fatalf("verdicts.txt:%d: %v", n, err)
		}
		out = append(out, verdict{line: fmt.Sprintf("verdicts.txt:%d", n), policy: fields[0], arch: a, syscall: fields[2], want: fields[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
