package compile

import (
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/measure"
	"github.com/syscell/syscell/policy"
	"github.com/syscell/syscell/syscalls"
)

// dockerProfile is Docker's default profile, resolved as Docker does with
// its default capabilities on a pinned kernel.
func dockerProfile(t testing.TB, arches ...syscalls.Arch) *policy.Resolved {
	t.Helper()
	p, _, err := policy.Load("../policy/testdata/docker-default.json", policy.OCIOptions{Kernel: "6.18"})
	if err != nil {
		t.Fatal(err)
	}
	return p.Resolve(arches)
}

// TestDockerTargets holds the compiler to the targets of its issue on
// Docker's default profile. These are counts, not timings: the same input
// always gives the same program. The argument-rule bound is the one target
// not yet met (issue: 9); 11 is below what gVisor's optimized program
// measures on the same inputs with measure.Measure (12.06), see
// docs/PERFORMANCE.md.
func TestDockerTargets(t *testing.T) {
	for _, tc := range []struct {
		arches                 []syscalls.Arch
		size                   int
		uniformMean, argMean   float64
		uniformMax, argRuleMax int
	}{
		{arches: []syscalls.Arch{syscalls.X86_64}, size: 110, uniformMean: 12, uniformMax: 16, argMean: 11, argRuleMax: 16},
		{arches: syscalls.Arches, size: 400, uniformMean: 12, uniformMax: 20, argMean: 13, argRuleMax: 20},
	} {
		r := dockerProfile(t, tc.arches...)
		prog, err := Compile(r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := measure.Measure(prog, r)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %d instructions, uniform %.2f/%d, argument rules %.2f/%d", tc.arches, rep.Instructions, rep.UniformMean, rep.UniformMax, rep.ArgRulesMean, rep.ArgRulesMax)
		if len(rep.Mismatches) > 0 {
			t.Errorf("%v: %d mismatches, first: %s", tc.arches, len(rep.Mismatches), rep.Mismatches[0])
		}
		if len(rep.NotCacheable) > 0 {
			t.Errorf("%v: not cacheable: %v", tc.arches, rep.NotCacheable)
		}
		if rep.Instructions > tc.size {
			t.Errorf("%v: %d instructions, target %d\n%s", tc.arches, rep.Instructions, tc.size, bpf.Disassemble(prog))
		}
		if rep.UniformMean > tc.uniformMean || rep.UniformMax > tc.uniformMax {
			t.Errorf("%v: uniform path %.2f/%d, target %.0f/%d", tc.arches, rep.UniformMean, rep.UniformMax, tc.uniformMean, tc.uniformMax)
		}
		if rep.ArgRulesMean > tc.argMean || rep.ArgRulesMax > tc.argRuleMax {
			t.Errorf("%v: argument-rule path %.2f/%d, target %.0f/%d", tc.arches, rep.ArgRulesMean, rep.ArgRulesMax, tc.argMean, tc.argRuleMax)
		}
	}
}

func BenchmarkCompileDocker(b *testing.B) {
	for _, arches := range [][]syscalls.Arch{{syscalls.X86_64}, syscalls.Arches} {
		r := dockerProfile(b, arches...)
		b.Run(archNames(arches), func(b *testing.B) {
			for b.Loop() {
				if _, err := Compile(r, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func archNames(arches []syscalls.Arch) string {
	s := ""
	for i, a := range arches {
		if i > 0 {
			s += "+"
		}
		s += a.String()
	}
	return s
}
