package bpf

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// passNames lets test archives name a single pass to run.
var passNames = map[string]pass{
	"removeDeadCode":   removeDeadCode,
	"threadJumps":      threadJumps,
	"simplifyJumps":    simplifyJumps,
	"useAnalysis":      useAnalysis,
	"removeDeadWrites": removeDeadWrites,
	"mergeReturns":     mergeReturns,
	"Optimize":         func(p []Instruction) ([]Instruction, bool) { return Optimize(p), true },
}

// TestOptimizeVectors runs each case of testdata/optimize.txtar: a program
// NAME.in, whose "; pass:" line names the pass to run (or Optimize), and
// the expected result NAME.out, in Disassemble's format. With -update it
// rewrites the results.
func TestOptimizeVectors(t *testing.T) {
	const path = "testdata/optimize.txtar"
	header, sections := readArchiveWithHeader(t, path)
	results := map[string]string{}
	for _, s := range sections {
		name, ok := strings.CutSuffix(s.name, ".in")
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			in := mustAssemble(t, s.text)
			if err := Validate(in); err != nil {
				t.Fatal(err)
			}
			passName, _ := directive(s.text, "pass")
			p, ok := passNames[passName]
			if !ok {
				t.Fatalf("unknown pass %q", passName)
			}
			got, _ := p(in)
			if err := Validate(got); err != nil {
				t.Errorf("result is invalid: %v", err)
			}
			checkEquivalent(t, in, got, 5000)
			results[name] = Disassemble(got) + "\n"
		})
	}
	for i, s := range sections {
		name, ok := strings.CutSuffix(s.name, ".out")
		if !ok {
			continue
		}
		switch {
		case *update:
			sections[i].text = results[name]
		case results[name] != s.text:
			t.Errorf("%s: got\n%swant\n%s", name, results[name], s.text)
		}
	}
	if *update {
		writeArchive(t, path, header, sections)
	}
}

// checkEquivalent runs both programs on random inputs drawn from the
// constants of a.
func checkEquivalent(t *testing.T, a, b []Instruction, inputs int) {
	t.Helper()
	c := seeded(uint64(len(a)))
	consts := []uint32{0, 1, 2, 3, 4, 5, 0xffffffff}
	for _, ins := range a {
		consts = append(consts, ins.K, ins.K+1, ins.K-1)
	}
	for range inputs {
		in := randomInput(c, consts)
		if err := compareRuns(a, b, in); err != nil {
			t.Fatalf("%v\nbefore:\n%safter:\n%s", err, Disassemble(a), Disassemble(b))
		}
	}
}

// compareRuns checks what Optimize promises for one input: the same
// verdict, no more instructions executed, and no loss of kernel caching.
func compareRuns(before, after []Instruction, in *SeccompData) error {
	r1, err := Run(before, in)
	if err != nil {
		return err
	}
	r2, err := Run(after, in)
	switch {
	case err != nil:
		return err
	case r1.Ret != r2.Ret:
		return fmt.Errorf("input %+v: returns %s, was %s", *in, formatRet(r2.Ret), formatRet(r1.Ret))
	case r2.Executed > r1.Executed:
		return fmt.Errorf("input %+v: executes %d instructions, was %d", *in, r2.Executed, r1.Executed)
	case r1.KernelCacheable && !r2.KernelCacheable:
		return fmt.Errorf("input %+v: no longer cacheable by the kernel", *in)
	}
	return nil
}

// checkOptimize checks Optimize on prog against the inputs: valid, no
// longer, a fixed point, and equivalent on each input.
func checkOptimize(t *testing.T, prog []Instruction, inputs []*SeccompData) []Instruction {
	t.Helper()
	out := Optimize(prog)
	if err := Validate(out); err != nil {
		t.Fatalf("Optimize made an invalid program: %v\nbefore:\n%safter:\n%s", err, Disassemble(prog), Disassemble(out))
	}
	if len(out) > len(prog) {
		t.Fatalf("Optimize made the program longer: %d > %d", len(out), len(prog))
	}
	if again := Optimize(out); !slices.Equal(again, out) {
		t.Fatalf("Optimize is not idempotent:\nonce:\n%stwice:\n%s", Disassemble(out), Disassemble(again))
	}
	for _, in := range inputs {
		if err := compareRuns(prog, out, in); err != nil {
			t.Fatalf("%v\nbefore:\n%safter:\n%s", err, Disassemble(prog), Disassemble(out))
		}
	}
	return out
}

// TestOptimizeDifferential compares random programs with their optimized
// forms on random inputs: at least 200,000 pairs, deterministically.
func TestOptimizeDifferential(t *testing.T) {
	const programs, inputsPerProgram = 4000, 60
	c := seeded(1)
	var before, after, ranBefore, ranAfter, pairs int
	for i := range programs {
		size := 1 + c.IntN(80)
		if i%10 == 0 {
			size = 200 + c.IntN(500)
		}
		prog, consts := randomProgram(c, size)
		for prog == nil {
			prog, consts = randomProgram(c, size)
		}
		if i%4 == 1 {
			prog, consts = policyProgram(c)
		}
		inputs := make([]*SeccompData, inputsPerProgram)
		for j := range inputs {
			inputs[j] = randomInput(c, consts)
		}
		out := checkOptimize(t, prog, inputs)
		if i%4 == 0 {
			checkPassesAlone(t, prog, inputs)
		}
		before, after = before+len(prog), after+len(out)
		for _, in := range inputs {
			r1, _ := Run(prog, in)
			r2, _ := Run(out, in)
			ranBefore, ranAfter = ranBefore+r1.Executed, ranAfter+r2.Executed
		}
		pairs += len(inputs)
	}
	if pairs < 200000 {
		t.Fatalf("only %d pairs", pairs)
	}
	t.Logf("%d (program, input) pairs; size %d -> %d instructions (%.1f%%), executed %d -> %d (%.1f%%)",
		pairs, before, after, 100*float64(after)/float64(before), ranBefore, ranAfter, 100*float64(ranAfter)/float64(ranBefore))
}

// checkPassesAlone runs each pass once on prog, so that a mistake in one
// cannot hide behind another.
func checkPassesAlone(t *testing.T, prog []Instruction, inputs []*SeccompData) {
	t.Helper()
	for _, p := range passes {
		out, changed := p(prog)
		if !changed {
			if !slices.Equal(out, prog) {
				t.Fatal("a pass that reports no change changed the program")
			}
			continue
		}
		if len(out) > len(prog) {
			t.Fatalf("a pass made the program longer:\n%s\n%s", Disassemble(prog), Disassemble(out))
		}
		if Validate(out) != nil {
			// Refused by the kernel's scratch check; Optimize drops it.
			continue
		}
		for _, in := range inputs {
			if err := compareRuns(prog, out, in); err != nil {
				t.Fatalf("%v\nbefore:\n%safter:\n%s", err, Disassemble(prog), Disassemble(out))
			}
		}
	}
}

// FuzzOptimize builds a program and inputs from the fuzzer's bytes and
// checks Optimize on them.
func FuzzOptimize(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0\xd0\xe0\xf0"))
	c := seeded(99)
	for range 8 {
		seed := make([]byte, 64)
		for i := range seed {
			seed[i] = byte(c.Uint32())
		}
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &byteChooser{b: b}
		prog, consts := randomProgram(c, 1+c.IntN(300))
		if prog == nil {
			t.Skip("no valid program")
		}
		inputs := make([]*SeccompData, 16)
		for i := range inputs {
			inputs[i] = randomInput(c, consts)
		}
		checkOptimize(t, prog, inputs)
		checkPassesAlone(t, prog, inputs)
	})
}

// TestOptimizeLibseccompExport optimizes libseccomp's output.
func TestOptimizeLibseccompExport(t *testing.T) {
	prog := mustAssemble(t, string(mustRead(t, "testdata/libseccomp_x86_64.txt")))
	out := Optimize(prog)
	checkGolden(t, "testdata/libseccomp_x86_64.opt.txt", Disassemble(out))
	checkEquivalent(t, prog, out, 20000)
}

// TestThreadJumpsReach checks that a conditional jump follows a chain of
// unconditional jumps only as far as eight bits reach, while an
// unconditional one goes to its end.
func TestThreadJumpsReach(t *testing.T) {
	var b Builder
	hop, mid, far := b.NewLabel("hop"), b.NewLabel("mid"), b.NewLabel("far")
	b.Add(LoadAbs(OffsetNr))
	b.JumpIf(JmpJeq, 1, hop, Next)
	for _, l := range []struct {
		at   int
		name Label
		to   Label
	}{{100, hop, mid}, {250, mid, far}, {400, far, Next}} {
		for b.Len() < l.at-1 {
			b.Add(LoadAbs(OffsetArch))
		}
		b.Add(Instruction{Op: opRetA})
		b.Bind(l.name)
		if l.to != Next {
			b.JumpTo(l.to)
		}
	}
	b.Add(Ret(retAllow))
	prog, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	out, changed := threadJumps(prog)
	if !changed {
		t.Fatal("threadJumps changed nothing")
	}
	if got := 2 + int(out[1].Jt); got != 250 {
		t.Errorf("the conditional jump goes to %d, want 250, the farthest ja it reaches", got)
	}
	if got := 101 + int(out[100].K); got != 400 {
		t.Errorf("the ja at 100 goes to %d, want 400", got)
	}
}

// TestOptimizeRespectsKernelScratchCheck shows the case where a sound
// rewrite would make the kernel refuse the program, and Optimize skips it.
func TestOptimizeRespectsKernelScratchCheck(t *testing.T) {
	prog := mustAssemble(t, `
		ld [0]
		jeq #0x1, +0, 4
		st M[0]
		ja 6
		ret ALLOW
		st M[0] ; dead, but the kernel needs it
		ld M[0]
		ret a
	`)
	if err := Validate(prog); err != nil {
		t.Fatal(err)
	}
	alone, changed := removeDeadCode(prog)
	if !changed || Validate(alone) == nil {
		t.Fatalf("removing the dead store should make the kernel refuse the program:\n%s", Disassemble(alone))
	}
	if out := Optimize(prog); Validate(out) != nil {
		t.Fatalf("Optimize made a program the kernel refuses:\n%s", Disassemble(out))
	}
}

// BenchmarkOptimize optimizes a naive rendering of a policy of 300 rules,
// near the kernel's limit on program length.
func BenchmarkOptimize(b *testing.B) {
	var bl Builder
	kill := bl.NewLabel("kill")
	bl.Add(LoadAbs(OffsetArch))
	rule := bl.NewLabel("rule")
	renderIf(&bl, JmpJeq, 0xc000003e, rule, kill)
	for nr := range uint32(300) {
		bl.Bind(rule)
		rule = bl.NewLabel("rule")
		match := bl.NewLabel("match")
		bl.Add(LoadAbs(OffsetNr))
		renderIf(&bl, JmpJeq, nr*2, match, rule)
		bl.Bind(match)
		bl.Add(Ret([]uint32{retAllow, retErrno | 1}[nr%2]))
	}
	bl.Bind(rule)
	bl.Add(Ret(retErrno | 38))
	bl.Bind(kill)
	bl.Add(Ret(retKillProcess))
	prog, err := bl.Program()
	if err != nil {
		b.Fatal(err)
	}
	var out []Instruction
	for b.Loop() {
		out = Optimize(prog)
	}
	b.ReportMetric(float64(len(prog)), "insns-before")
	b.ReportMetric(float64(len(out)), "insns-after")
}
