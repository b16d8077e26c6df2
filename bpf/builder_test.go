package bpf

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBuilder(t *testing.T) {
	var b Builder
	allow, deny := b.NewLabel("allow"), b.NewLabel("deny")
	if b.Bound(allow) {
		t.Fatal("a new label is bound")
	}
	b.Add(LoadAbs(OffsetNr))
	b.JumpIf(JmpJeq, 1, allow, Next)
	b.JumpIf(JmpJgt, 10, Next, deny)
	b.JumpIf(JmpJset|SrcX, 0, Next, Next)
	b.JumpTo(allow)
	b.Bind(deny)
	b.Add(Ret(retErrno | 1))
	b.Bind(allow)
	if !b.Bound(allow) || b.Len() != 6 {
		t.Fatalf("Bound = %v, Len = %d", b.Bound(allow), b.Len())
	}
	b.Add(Ret(retAllow))
	got, err := b.Program()
	if err != nil {
		t.Fatal(err)
	}
	want := mustAssemble(t, `
		0000: ld [0]
		0001: jeq #0x1, 6, 2
		0002: jgt #0xa, 3, 5
		0003: jset x, 4, 4
		0004: ja 6
		0005: ret ERRNO(1)
		0006: ret ALLOW
	`)
	if !slices.Equal(got, want) {
		t.Fatalf("Program() =\n%swant\n%s", Disassemble(got), Disassemble(want))
	}
}

func TestBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(b *Builder)
		want  string
	}{
		{"unbound label", func(b *Builder) {
			l := b.NewLabel("nowhere")
			b.JumpIf(JmpJeq, 1, l, Next)
			b.Add(Ret(retAllow))
		}, `instruction 0 jumps to label "nowhere", which is never placed`},
		{"backward jump", func(b *Builder) {
			l := b.NewLabel("top")
			b.Bind(l)
			b.Add(LoadAbs(0))
			b.JumpTo(l)
			b.Add(Ret(retAllow))
		}, `instruction 1 jumps backward to label "top" at 0`},
		{"jump to itself", func(b *Builder) {
			b.Add(LoadAbs(0))
			l := b.NewLabel("here")
			b.Bind(l)
			b.JumpIf(JmpJeq, 1, l, Next)
			b.Add(Ret(retAllow))
		}, `instruction 1 jumps backward to label "here" at 1`},
		{"label after the end", func(b *Builder) {
			l := b.NewLabel("end")
			b.JumpTo(l)
			b.Add(Ret(retAllow))
			b.Bind(l)
		}, `label "end" is placed after the last instruction`},
		{"label placed twice", func(b *Builder) {
			l := b.NewLabel("twice")
			b.Bind(l)
			b.Add(LoadAbs(0))
			b.Bind(l)
			b.Add(Ret(retAllow))
		}, `label "twice" is placed twice`},
		{"jump added with Add", func(b *Builder) {
			b.Add(Jump(JmpJeq, 1, 0, 1))
			b.Add(Ret(retAllow))
			b.Add(Ret(retErrno))
		}, "instruction 0 is a jump added with Add"},
		{"falls off the end", func(b *Builder) {
			b.Add(LoadAbs(0))
		}, "instruction 0, the last, lets execution run off the end"},
		{"conditional falls off the end", func(b *Builder) {
			l := b.NewLabel("l")
			b.JumpIf(JmpJeq, 1, l, Next)
			b.Bind(l)
			b.JumpIf(JmpJeq, 1, Next, Next)
		}, "instruction 1, the last, lets execution run off the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Builder
			tc.build(&b)
			_, err := b.Program()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Program() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestBuilderTooLong(t *testing.T) {
	for _, tc := range []struct {
		name    string
		total   int // instructions added, before any trampoline
		far     bool
		tooLong bool
	}{
		{"at the limit", MaxInstructions, false, false},
		{"past the limit", MaxInstructions + 1, false, true},
		{"pushed past the limit by a trampoline", MaxInstructions, true, true},
		{"trampoline within the limit", MaxInstructions - 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Builder
			end := b.NewLabel("end")
			if tc.far {
				b.JumpIf(JmpJeq, 1, end, Next)
			}
			for b.Len() < tc.total-1 {
				b.Add(LoadAbs(0))
			}
			b.Bind(end)
			b.Add(Ret(retAllow))
			prog, err := b.Program()
			if got := errors.Is(err, ErrTooLong); got != tc.tooLong {
				t.Fatalf("Program() of %d instructions: %v, want too long: %v", len(prog), err, tc.tooLong)
			}
			if err == nil && Validate(prog) != nil {
				t.Fatal(Validate(prog))
			}
		})
	}
}

// TestBuilderTrampolines checks the layout of the trampolines: one per far
// side, shared when both sides go to the same label, fall-through kept.
func TestBuilderTrampolines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jt, jf string // "far", "far2", "near" or "next"
		want   string // the instructions after the jump, up to the first load
	}{
		{"true side far", "far", "next", "jeq #0x1, 2, 3|ja 261"},
		{"false side far", "near", "far", "jeq #0x1, 51, 2|ja 261"},
		{"both far, same label", "far", "far", "jeq #0x1, 2, 2|ja 261"},
		{"both far, two labels", "far", "far2", "jeq #0x1, 2, 3|ja 262|ja 263"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Builder
			labels := map[string]Label{"far": b.NewLabel("far"), "far2": b.NewLabel("far2"), "near": b.NewLabel("near"), "next": Next}
			b.Add(LoadAbs(OffsetNr))
			b.JumpIf(JmpJeq, 1, labels[tc.jt], labels[tc.jf])
			for b.Len() < 260 {
				if b.Len() == 50 {
					b.Bind(labels["near"])
					b.Add(Ret(retErrno | 3))
				}
				b.Add(LoadAbs(OffsetArch))
			}
			b.Bind(labels["far"])
			b.Add(Ret(retErrno | 1))
			b.Bind(labels["far2"])
			b.Add(Ret(retErrno | 2))
			prog, err := b.Program()
			if err != nil {
				t.Fatal(err)
			}
			if err := Validate(prog); err != nil {
				t.Fatal(err)
			}
			var got []string
			for pc := 1; prog[pc].Op != opLdAbsW; pc++ {
				text, _ := render(prog[pc], pc)
				got = append(got, text)
			}
			if g := strings.Join(got, "|"); g != tc.want {
				t.Fatalf("got %s, want %s", g, tc.want)
			}
		})
	}
}

// farSpec is a program with jumps to labels, rendered two ways by
// renderFar.
type farSpec struct {
	conds  []farCond
	filler []int // loads before each label
}

type farCond struct {
	at     int    // index of the label before which it is placed, or -1
	op     uint16 // jump operation
	k      uint32
	jt, jf int // label indices, -1 to fall through
}

// TestBuilderFarJumps compares random programs whose conditional jumps
// reach far, which the Builder routes through trampolines, with the same
// programs written so that no conditional jump reaches past the next two
// instructions: both must return the same for every input.
func TestBuilderFarJumps(t *testing.T) {
	c := seeded(17)
	trampolines := 0
	for range 300 {
		spec := randomFarSpec(c)
		direct, err := renderFar(spec, false)
		if err != nil {
			t.Fatal(err)
		}
		safe, err := renderFar(spec, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(direct); err != nil {
			t.Fatalf("%v\n%s", err, Disassemble(direct))
		}
		trampolines += len(direct) - directLen(spec)
		for nr := uint32(0); nr < 40; nr++ {
			in := &SeccompData{Nr: nr}
			r1, err1 := Run(direct, in)
			r2, err2 := Run(safe, in)
			if err1 != nil || err2 != nil || r1.Ret != r2.Ret {
				t.Fatalf("nr %d: %s (%v) with trampolines, %s (%v) without:\n%s", nr, formatRet(r1.Ret), err1, formatRet(r2.Ret), err2, Disassemble(direct))
			}
		}
	}
	if trampolines == 0 {
		t.Fatal("no program needed a trampoline")
	}
	t.Logf("%d trampolines", trampolines)
}

func randomFarSpec(c chooser) farSpec {
	labels := 2 + c.IntN(6)
	spec := farSpec{filler: make([]int, labels)}
	for i := range spec.filler {
		spec.filler[i] = c.IntN(3) * c.IntN(200)
	}
	for range 1 + c.IntN(12) {
		at := c.IntN(labels+1) - 1
		target := func() int {
			if c.IntN(4) == 0 {
				return -1
			}
			return at + 1 + c.IntN(labels-at-1)
		}
		if at == labels-1 {
			continue
		}
		spec.conds = append(spec.conds, farCond{at: at, op: jumpOps[c.IntN(3)], k: uint32(c.IntN(40)), jt: target(), jf: target()})
	}
	return spec
}

// directLen is the length of renderFar's direct form without trampolines.
func directLen(spec farSpec) int {
	n := 1 + len(spec.conds) + 1
	for _, f := range spec.filler {
		n += f + 1
	}
	return n
}

// renderFar writes spec: label i returns ERRNO(i) after its filler loads;
// conditional jumps go straight to their labels, or, when safe is set, to
// unconditional jumps placed right after them.
func renderFar(spec farSpec, safe bool) ([]Instruction, error) {
	var b Builder
	labels := make([]Label, len(spec.filler))
	for i := range labels {
		labels[i] = b.NewLabel("l")
	}
	emit := func(at int) {
		for _, cd := range spec.conds {
			if cd.at != at {
				continue
			}
			jt, jf := Next, Next
			if cd.jt >= 0 {
				jt = labels[cd.jt]
			}
			if cd.jf >= 0 {
				jf = labels[cd.jf]
			}
			if !safe {
				b.JumpIf(cd.op, cd.k, jt, jf)
				continue
			}
			after := b.NewLabel("after")
			if jt == Next {
				jt = after
			}
			if jf == Next {
				jf = after
			}
			renderIf(&b, cd.op, cd.k, jt, jf)
			b.Bind(after)
		}
	}
	b.Add(LoadAbs(OffsetNr))
	emit(-1)
	b.Add(Ret(retAllow))
	for i, l := range labels {
		b.Bind(l)
		for range spec.filler[i] {
			b.Add(LoadAbs(OffsetNr))
		}
		emit(i)
		b.Add(Ret(retErrno | uint32(i)))
	}
	return b.Program()
}
