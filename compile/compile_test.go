package compile

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/syscell/syscell/bpf"
	"github.com/syscell/syscell/policy"
)

// decide runs prog on one input.
func decide(t testing.TB, prog []bpf.Instruction, in input) uint32 {
	t.Helper()
	d := bpf.SeccompData{Nr: in.nr, Arch: in.arch, Args: in.args}
	res, err := bpf.Run(prog, &d)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res.Ret
}

// checkAgainstReference compiles p both ways and compares both programs with
// the policy's own semantics on every input. It returns the inputs checked.
func checkAgainstReference(t testing.TB, p *policy.Policy, inputs func(*policy.Resolved) []input) int {
	t.Helper()
	r := p.Resolve(p.Arches)
	opt, err := Compile(r, Options{Hot: []string{"futex", "ioctl"}})
	if err != nil {
		t.Fatalf("compile: %v\npolicy: %+v", err, p)
	}
	naive, err := Naive(r)
	if err != nil {
		t.Fatalf("naive: %v", err)
	}
	if err := bpf.Validate(opt); err != nil {
		t.Fatalf("optimized program is invalid: %v\n%s", err, bpf.Disassemble(opt))
	}
	ins := inputs(r)
	for _, in := range ins {
		want := r.Decide(in.arch, in.nr, in.args).Ret()
		if got := decide(t, naive, in); got != want {
			t.Fatalf("naive program: %+v: got %#x, policy says %#x\npolicy: %s\n%s", in, got, want, describe(p), bpf.Disassemble(naive))
		}
		if got := decide(t, opt, in); got != want {
			t.Fatalf("optimized program: %+v: got %#x, policy says %#x\npolicy: %s\n%s", in, got, want, describe(p), bpf.Disassemble(opt))
		}
	}
	return len(ins)
}

func describe(p *policy.Policy) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "arches %v default %s bad-arch %s\n", p.Arches, p.Default, p.BadArch)
	for _, r := range p.Rules {
		fmt.Fprintf(&b, "  %v %s %v\n", r.Syscalls, r.Action, r.Conds)
	}
	return b.String()
}

// TestRandomPoliciesMatchReference is the deterministic equivalence test:
// over a million generated inputs, the policy's semantics, the unoptimized
// program and the optimized program agree.
func TestRandomPoliciesMatchReference(t *testing.T) {
	const want = 1_000_000
	total := 0
	for seed := int64(1); total < want; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := randomPolicy(rng)
		total += checkAgainstReference(t, p, func(r *policy.Resolved) []input { return inputsFor(r, rng, 12) })
	}
	t.Logf("%d inputs agree", total)
}

// FuzzCompile derives a policy and inputs from the fuzzer's bytes.
func FuzzCompile(f *testing.F) {
	for _, seed := range []int64{1, 2, 3, 42} {
		f.Add(seed, uint64(0), uint64(38))
	}
	f.Fuzz(func(t *testing.T, seed int64, a0, a1 uint64) {
		rng := rand.New(rand.NewSource(seed))
		p := randomPolicy(rng)
		checkAgainstReference(t, p, func(r *policy.Resolved) []input {
			ins := inputsFor(r, rng, 2)
			for i := range ins {
				if i%2 == 0 {
					ins[i].args[0], ins[i].args[1] = a0, a1
				}
			}
			return ins
		})
	})
}

// TestRuleOrderDoesNotMatter checks determinism: the same rules in another
// order compile to the same bytes.
func TestRuleOrderDoesNotMatter(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		p := randomPolicy(rng)
		a := mustCompile(t, p)
		rng.Shuffle(len(p.Rules), func(i, j int) { p.Rules[i], p.Rules[j] = p.Rules[j], p.Rules[i] })
		if b := mustCompile(t, p); !bytes.Equal(bpf.Encode(a), bpf.Encode(b)) {
			t.Fatalf("seed %d: reordering rules changed the program\n%s\n---\n%s", seed, bpf.Disassemble(a), bpf.Disassemble(b))
		}
	}
}

func mustCompile(t *testing.T, p *policy.Policy) []bpf.Instruction {
	t.Helper()
	prog, err := Compile(p.Resolve(p.Arches), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog
}
