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
// always gives the same program. The issue sets path targets for the x86_64
// program; the three-ABI bounds only guard against regressions.
func TestDockerTargets(t *testing.T) {
	for _, tc := range []struct {
		arches                 []syscalls.Arch
		size                   int
		uniformMean, argMean   float64
		uniformMax, argRuleMax int
	}{
		{arches: []syscalls.Arch{syscalls.X86_64}, size: 110, uniformMean: 12, uniformMax: 16, argMean: 9, argRuleMax: 16},
		{arches: syscalls.Arches, size: 400, uniformMean: 12, uniformMax: 18, argMean: 11, argRuleMax: 16},
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

// TestDockerCoverage is gVisor's secfuzz criterion: inputs generated from the
// policy reach every instruction and both sides of every branch of the
// optimized program, and each is decided as the policy says.
func TestDockerCoverage(t *testing.T) {
	for _, arches := range [][]syscalls.Arch{{syscalls.X86_64}, syscalls.Arches} {
		r := dockerProfile(t, arches...)
		prog, err := Compile(r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var cov bpf.Coverage
		for _, in := range coverageInputs(r) {
			d := bpf.SeccompData{Nr: in.nr, Arch: in.arch, Args: in.args}
			res, err := bpf.RunCovered(prog, &d, &cov)
			if err != nil {
				t.Fatal(err)
			}
			if want := r.Decide(in.arch, in.nr, in.args).Ret(); res.Ret != want {
				t.Fatalf("%+v: program %#x, policy %#x", in, res.Ret, want)
			}
		}
		if missing := cov.Missing(prog); len(missing) > 0 {
			t.Errorf("%v: not covered: %v\n%s", arches, missing, bpf.Disassemble(prog))
		}
	}
}

// coverageInputs: every number of every ABI's range, with the argument
// vectors of its rules, from each ABI and from a foreign one.
func coverageInputs(r *policy.Resolved) []input {
	var in []input
	for _, arch := range []uint32{syscalls.AuditArchX86_64, syscalls.AuditArchI386, 0xdead} {
		for _, base := range []uint32{0, syscalls.X32Bit} {
			for nr := base; nr < base+measure.Range; nr++ {
				for _, t := range r.Tables {
					for _, args := range policy.ArgVectors(t.Syscalls[nr]) {
						in = append(in, input{arch, nr, args})
					}
				}
			}
		}
		in = append(in, input{arch, ^uint32(0), [policy.MaxArgs]uint64{}})
	}
	return in
}
