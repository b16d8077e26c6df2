package privilege

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/ranking"
)

// opt fixes the host an OCI profile is imported for, so that results do
// not depend on the machine.
var opt = policy.OCIOptions{Kernel: "6.18"}

func loadRanking(t *testing.T, name string) *ranking.Ranking {
	t.Helper()
	r, err := ranking.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// vector is a test vector of testdata/score or testdata/diff: a txtar
// archive whose comment works the expected figures out by hand, holding
// input files and, under the name of each ranking, what is expected with
// it.
type vector struct {
	inputs []txtar.File
	wants  map[string]string
}

func readVectors(t *testing.T, dir string) map[string]vector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors in testdata/%s (%v)", dir, err)
	}
	vectors := map[string]vector{}
	for _, path := range paths {
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		v := vector{wants: map[string]string{}}
		for _, f := range ar.Files {
			if slices.Contains(ranking.Names(), f.Name) {
				v.wants[f.Name] = string(f.Data)
			} else {
				v.inputs = append(v.inputs, f)
			}
		}
		if len(v.wants) == 0 {
			t.Fatalf("%s: no expected results (sections named after rankings)", path)
		}
		vectors[filepath.Base(path)] = v
	}
	return vectors
}

func parse(t *testing.T, f txtar.File) *Allowlists {
	t.Helper()
	a, _, err := Parse(f.Name, f.Data, opt)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestScoreVectors(t *testing.T) {
	for name, v := range readVectors(t, "score") {
		if len(v.inputs) != 1 {
			t.Fatalf("%s: %d inputs, want 1", name, len(v.inputs))
		}
		a := parse(t, v.inputs[0])
		for rname, want := range v.wants {
			s := a.Score(loadRanking(t, rname))
			if got := renderScore(a, s); got != want {
				t.Errorf("%s, %s:\ngot:\n%swant:\n%s", name, rname, got, want)
			}
			if !s.Phased {
				checkOnePhase(t, name+", "+rname, s)
			}
		}
	}
}

// checkOnePhase checks that without phases the serving phase is the one
// phase: every serving figure equals its one-phase twin.
func checkOnePhase(t *testing.T, name string, s Score) {
	t.Helper()
	for _, c := range append(s.Compartments, s.Union) {
		if c.ServingPrivilege != c.Privilege || !slices.Equal(c.Serving, c.Syscalls) {
			t.Errorf("%s: %s serves with %v (%d), want its syscalls %v (%d)",
				name, c.Name, c.Serving, c.ServingPrivilege, c.Syscalls, c.Privilege)
		}
	}
	if s.AppServing() != s.App() || s.SeccompServing() != s.Seccomp() ||
		s.ServingReduction() != s.Reduction() || s.PhasedReduction() != s.Reduction() {
		t.Errorf("%s: serving P_A %d, P_seccomp %d, reductions %v and %v, want %d, %d and %v",
			name, s.AppServing(), s.SeccompServing(), s.ServingReduction(), s.PhasedReduction(),
			s.App(), s.Seccomp(), s.Reduction())
	}
}

// renderScore writes what a score vector expects, one figure a line.
func renderScore(a *Allowlists, s Score) string {
	var b strings.Builder
	format := a.Format.String()
	if a.WholeProcess {
		format += ", whole process"
	}
	fmt.Fprintf(&b, "format: %s\n", format)
	for _, c := range s.Compartments {
		fmt.Fprintf(&b, "%s: %d\n", c.Name, c.Privilege)
	}
	fmt.Fprintf(&b, "%s: %d\n", s.Union.Name, s.Seccomp())
	fmt.Fprintf(&b, "P_A: %d (%s)\n", s.App(), s.Compartments[s.Most].Name)
	fmt.Fprintf(&b, "reduction: %.2f%%\n", s.Reduction())
	if !s.Phased {
		return b.String()
	}
	fmt.Fprintf(&b, "serving from: %s\n", strings.Join(a.ServingFrom, " "))
	for _, c := range append(s.Compartments, s.Union) {
		fmt.Fprintf(&b, "%s serving: %d {%s}\n", c.Name, c.ServingPrivilege, strings.Join(c.Serving, " "))
	}
	fmt.Fprintf(&b, "P_A serving: %d (%s)\n", s.AppServing(), s.Compartments[s.MostServing].Name)
	fmt.Fprintf(&b, "serving reduction: %.2f%%\n", s.ServingReduction())
	fmt.Fprintf(&b, "phased reduction: %.2f%%\n", s.PhasedReduction())
	return b.String()
}

// The expected values are equation 3 worked out by hand.
func TestReduction(t *testing.T) {
	for _, tc := range []struct {
		seccomp, p int
		want       float64
	}{
		{12, 7, 500.0 / 12}, // (12 − 7) / 12 × 100
		{119, 53, 6600.0 / 119},
		{10, 10, 0},
		{10, 0, 100},
		{0, 0, 0}, // nothing allowed: nothing to reduce
	} {
		if got := Reduction(tc.seccomp, tc.p); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Reduction(%d, %d) = %v, want %v", tc.seccomp, tc.p, got, tc.want)
		}
	}
}

// TestSetSemantics checks that S_C is a set: order and repeats do not
// change a compartment, nor its privilege.
func TestSetSemantics(t *testing.T) {
	c := newCompartment(Compartment{Syscalls: []string{"write", "execve", "read", "execve"}})
	if want := []string{"execve", "read", "write"}; !slices.Equal(c.Syscalls, want) {
		t.Errorf("syscalls %v, want %v", c.Syscalls, want)
	}
	// execve 3 + read 1 + write 1, execve once.
	if got := c.Privilege(loadRanking(t, "younis2014")); got != 5 {
		t.Errorf("privilege %d, want 5", got)
	}
}

// TestDefaultAllow checks the whole-process compartment of policies that
// allow by default against each other, since listing every syscall by hand
// would not be checking anything: denying execve (3) and ioctl (2)
// outright, or killing on read (1), removes exactly their scores; an errno
// rule with a condition removes nothing.
func TestDefaultAllow(t *testing.T) {
	r := loadRanking(t, "younis2014")
	whole := func(rules string) int {
		t.Helper()
		a := parse(t, txtar.File{Name: "p.toml", Data: []byte("version = 1\ndefault = \"allow\"\n" + rules)})
		return a.Score(r).App()
	}
	all := whole("")
	for _, tc := range []struct {
		rules string
		less  int
	}{
		{"[[rule]]\naction = \"errno(EPERM)\"\nsyscalls = [\"execve\", \"ioctl\"]\n", 5},
		{"[[rule]]\naction = \"kill-process\"\nsyscalls = [\"read\"]\n", 1},
		{"[[rule]]\naction = \"errno(EPERM)\"\nsyscalls = [\"execve\"]\nargs = [\"arg0 == 0\"]\n", 0},
	} {
		if got := whole(tc.rules); got != all-tc.less {
			t.Errorf("%s: privilege %d, want %d - %d", tc.rules, got, all, tc.less)
		}
	}
}

// TestArches checks that a policy covering x86 too counts x86's own calls:
// chown32 is x86's chown, and ranks high in the default ranking.
func TestArches(t *testing.T) {
	r := loadRanking(t, "default")
	score := func(arches string) int {
		t.Helper()
		src := "version = 1\ndefault = \"errno(EPERM)\"\narches = [" + arches + "]\n" +
			"[[rule]]\naction = \"allow\"\nsyscalls = [\"read\", \"chown32\"]\n"
		return parse(t, txtar.File{Name: "p.toml", Data: []byte(src)}).Score(r).App()
	}
	// x86_64 has no chown32: read 1. With x86: read 1 + chown32 3.
	if got := score(`"x86_64"`); got != 1 {
		t.Errorf("x86_64 only: privilege %d, want 1", got)
	}
	if got := score(`"x86_64", "x86"`); got != 4 {
		t.Errorf("x86_64 and x86: privilege %d, want 4", got)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		data string
		want Format
	}{
		{`{"/lib/a.so": {"0": 1}}`, Syso},
		{" \n{\n}", Syso},
		{`{"/lib/a.so": {`, Syso}, // truncated: syso's reader says where
		{`{"defaultAction": "SCMP_ACT_ALLOW"}`, OCI},
		{`{"syscalls": [], "defaultAction": "SCMP_ACT_ALLOW"}`, OCI},
		{`{,}`, OCI}, // no telling: the OCI parser explains
		{"[files]\n", Addrfilter},
		{"# whitelist\n\n[files]\n\"a\" = [0]\n", Addrfilter},
		{"version = 1\n[files]\n", Syscell},
		{"[[files]]\n", Syscell},
		{"version = 1\ndefault = \"allow\"\n", Syscell},
		{"", Syscell},
	} {
		if got := detect([]byte(tc.data)); got != tc.want {
			t.Errorf("detect(%q) = %s, want %s", tc.data, got, tc.want)
		}
	}
}
