package bpf

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestDisassemble(t *testing.T) {
	for _, tc := range []struct {
		ins  Instruction
		pc   int
		want string
	}{
		{LoadAbs(OffsetNr), 7, "0007: ld [0]            ; nr"},
		{LoadAbs(OffsetArch), 0, "0000: ld [4]            ; arch"},
		{LoadAbs(OffsetIPLow), 0, "0000: ld [8]            ; ip low"},
		{LoadAbs(OffsetIPHigh), 0, "0000: ld [12]           ; ip high"},
		{LoadAbs(ArgLow(0)), 0, "0000: ld [16]           ; args[0] low"},
		{LoadAbs(ArgHigh(0)), 0, "0000: ld [20]           ; args[0] high"},
		{LoadAbs(ArgHigh(5)), 0, "0000: ld [60]           ; args[5] high"},
		{LoadAbs(64), 0, "0000: ld [64]"},
		{LoadAbs(2), 0, "0000: ld [2]"},
		{Jump(JmpJeq, 0x29, 3, 0), 8, "0008: jeq #0x29, 12, 9"},
		{Jump(JmpJset|SrcX, 0, 255, 1), 1, "0001: jset x, 257, 3"},
		{Ja(10), 5, "0005: ja 16"},
		{Ret(retAllow), 9, "0009: ret ALLOW"},
		{Ret(retErrno | 1), 0, "0000: ret ERRNO(1)"},
		{Ret(retErrno), 0, "0000: ret ERRNO(0)"},
		{Ret(retKillProcess), 0, "0000: ret KILL_PROCESS"},
		{Ret(retKillThread), 0, "0000: ret KILL_THREAD"},
		{Ret(retTrap), 0, "0000: ret TRAP(0)"},
		{Ret(retTrace | 7), 0, "0000: ret TRACE(7)"},
		{Ret(retUserNotif), 0, "0000: ret USER_NOTIF"},
		{Ret(retLog), 0, "0000: ret LOG"},
		{Ret(retAllow | 2), 0, "0000: ret ALLOW(2)"},
		{Ret(0x00010000), 0, "0000: ret #0x10000"},
		{Instruction{Op: opRetA}, 0, "0000: ret a"},
		{Alu(AluAnd, 0xff00), 0, "0000: and #0xff00"},
		{Instruction{Op: ClassAlu | AluLsh | SrcX}, 0, "0000: lsh x"},
		{Instruction{Op: opNeg}, 0, "0000: neg"},
		{Instruction{Op: opLdImm, K: 5}, 0, "0000: ld #0x5"},
		{Instruction{Op: opLdLen}, 0, "0000: ld #len"},
		{Instruction{Op: opLdxMem, K: 15}, 0, "0000: ldx M[15]"},
		{Instruction{Op: opStx, K: 3}, 0, "0000: stx M[3]"},
		{Instruction{Op: opLdIndH, K: 2}, 0, "0000: ldh [x + 2]"},
		{Instruction{Op: opLdxMsh, K: 14}, 0, "0000: ldx 4*([14]&0xf)"},
		{Instruction{Op: opTax}, 0, "0000: tax"},
		// Fields the opcode ignores are kept by writing the instruction raw.
		{Instruction{Op: opTax, K: 1}, 0, "0000: raw 0x07, 0, 0, 0x1"},
		{Instruction{Op: opLdAbsW, Jt: 1}, 0, "0000: raw 0x20, 1, 0, 0x0"},
		{Instruction{Op: 0xffff, Jt: 2, Jf: 3, K: 4}, 0, "0000: raw 0xffff, 2, 3, 0x4"},
	} {
		prog := make([]Instruction, tc.pc+1)
		prog[tc.pc] = tc.ins
		lines := strings.Split(Disassemble(prog), "\n")
		if got := lines[tc.pc]; got != tc.want {
			t.Errorf("Disassemble(%#v) = %q, want %q", tc.ins, got, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		ins  Instruction
		want string
	}{
		{Jump(JmpJgt, 0x64, 3, 0), "jgt #0x64, +3, +0"},
		{Ja(10), "ja +10"},
		{LoadAbs(0), "ld [0]"},
	} {
		if got := tc.ins.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestAssemble(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want []Instruction
	}{
		{"absolute", "0000: ld [0]\n0001: jeq #0x1, 2, 3\n0002: ret ALLOW\n0003: ret ERRNO(1)\n",
			[]Instruction{LoadAbs(0), Jump(JmpJeq, 1, 0, 1), Ret(retAllow), Ret(retErrno | 1)}},
		{"labels", "ld [0] ; nr\njeq #1, yes, no\nyes:\nret ALLOW\nno:\nret ERRNO(1)",
			[]Instruction{LoadAbs(0), Jump(JmpJeq, 1, 0, 1), Ret(retAllow), Ret(retErrno | 1)}},
		{"relative and decimal", "ld [0]\njeq #1, +0, +1\nret #2147418112\nret #0x50001",
			[]Instruction{LoadAbs(0), Jump(JmpJeq, 1, 0, 1), Ret(retAllow), Ret(retErrno | 1)}},
		{"spacing and comments", "  ; a comment\n\n\tld  [x+4]\nldb\t[x +\t4]\n  ja   end ; far\nend: \nret  a",
			[]Instruction{{Op: opLdIndW, K: 4}, {Op: opLdIndB, K: 4}, Ja(0), {Op: opRetA}}},
		{"all moves", "ld #len\nldx #len\nld #7\nldx #0x7\nld M[1]\nldx M[2]\nst M[3]\nstx M[4]\nldx 4*([14]&0xf)\nldh [2]\nldb [3]\nld [x + 1]\nldh [x + 2]",
			[]Instruction{{Op: opLdLen}, {Op: opLdxLen}, {Op: opLdImm, K: 7}, {Op: opLdxImm, K: 7}, {Op: opLdMem, K: 1}, {Op: opLdxMem, K: 2},
				{Op: opSt, K: 3}, {Op: opStx, K: 4}, {Op: opLdxMsh, K: 14}, {Op: opLdAbsH, K: 2}, {Op: opLdAbsB, K: 3}, {Op: opLdIndW, K: 1}, {Op: opLdIndH, K: 2}}},
		{"far ja", "ja 70000", []Instruction{Ja(69999)}},
		{"raw", "raw 0x15, 1, 2, 0xffffffff", []Instruction{{Op: 0x15, Jt: 1, Jf: 2, K: 0xffffffff}}},
		{"empty", "; nothing\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Assemble(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Assemble = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAssembleErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string
	}{
		{"ld [0]\nfoo #1", "line 2: unknown instruction \"foo\""},
		{"ld [0]\n\n0005: ret a", "line 3: index 0005, but the instruction is number 1"},
		{"a:\na:\nret a", "line 2: label \"a\" defined twice"},
		{"ja nowhere\nret a", "line 1: target \"nowhere\" is neither an index nor a known label"},
		{"ld [0]\nja 1\nret a", "line 2: target 1 is not after instruction 1"},
		{"jeq #1, 257, 1\nret a", "line 1: target 257 is 256 instructions past the next one; the limit is 255"},
		{"jeq #1, +0\nret a", "line 1: want 3 operands, have 2"},
		{"jeq y, +0, +0", "line 1: operand \"y\" is neither #k nor x"},
		{"add #0x100000000", "line 1: \"0x100000000\" is not a 32-bit number"},
		{"ld [x]", "line 1: \"x\" is not a 32-bit number"},
		{"ldh #1", "line 1: ldh has no operand form \"#1\""},
		{"st [0]", "line 1: st has no operand form \"[0]\""},
		{"ret DENY", "line 1: unknown return value \"DENY\""},
		{"ret ERRNO(70000)", "line 1: unknown return value \"ERRNO(70000)\""},
		{"ret ERRNO(1", "line 1: unknown return value \"ERRNO(1\""},
		{"tax x", "line 1: want 0 operands, have 1"},
		{"raw 0x10000, 0, 0, 0", "line 1: raw field 0: \"0x10000\" does not fit in 16 bits"},
		{"ja +x", "line 1: bad relative target \"+x\""},
	} {
		_, err := Assemble(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Assemble(%q) = %v, want an error containing %q", tc.text, err, tc.want)
		}
	}
}

// TestRoundTrip checks that Assemble reads back whatever Disassemble and
// String write, for every opcode with a mnemonic and for random bits, and
// that Disassemble rewrites the test vectors' canonical text unchanged.
func TestRoundTrip(t *testing.T) {
	c := seeded(3)
	ops := slices.Sorted(maps.Keys(operands))
	for range 20000 {
		prog := make([]Instruction, 1+c.IntN(8))
		for i := range prog {
			ins := Instruction{Op: ops[c.IntN(len(ops))], Jt: uint8(c.Uint32()), Jf: uint8(c.Uint32()), K: c.Uint32()}
			switch c.IntN(4) {
			case 0:
				ins.Op = uint16(c.Uint32())
			case 1:
				ins.Jt, ins.Jf = 0, 0
			}
			prog[i] = ins
		}
		text := Disassemble(prog)
		got, err := Assemble(text)
		if err != nil || !slices.Equal(got, prog) {
			t.Fatalf("Assemble(Disassemble(%v)) = %v, %v\n%s", prog, got, err, text)
		}
		for _, ins := range prog {
			got, err := Assemble(ins.String())
			if err != nil || len(got) != 1 || got[0] != ins {
				t.Fatalf("Assemble(%q) = %v, %v, want %v", ins.String(), got, err, ins)
			}
		}
	}
	raw, err := os.ReadFile("testdata/libseccomp_x86_64.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if got := Disassemble(mustAssemble(t, text)); got != text {
		t.Fatalf("Disassemble(Assemble(text)) changed the text:\n%s", got)
	}
}

// FuzzDisassemble checks the round trip from raw bytes to text and back.
func FuzzDisassemble(f *testing.F) {
	f.Add(Encode([]Instruction{LoadAbs(0), Jump(JmpJeq, 1, 0, 1), Ret(retAllow), Ret(retErrno | 1)}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		prog, err := Decode(b[:len(b)/InstructionSize*InstructionSize])
		if err != nil {
			t.Fatal(err)
		}
		back, err := Assemble(Disassemble(prog))
		if err != nil || !slices.Equal(back, prog) {
			t.Fatalf("round trip of %v: %v, %v", prog, back, err)
		}
	})
}
