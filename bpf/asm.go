package bpf

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Assemble reads the text Disassemble writes. Each line holds one
// instruction, optionally after its index ("0007:"), which must then match
// its position. A line "name:" labels the next instruction. A jump target is
// an absolute index, a label, or +n for n instructions past the next one.
// A semicolon starts a comment. Errors name the line.
func Assemble(text string) ([]Instruction, error) {
	lines, labels, err := scan(text)
	if err != nil {
		return nil, err
	}
	prog := make([]Instruction, 0, len(lines))
	for pc, l := range lines {
		p := parser{pc: pc, labels: labels}
		ins, err := p.instruction(l.text)
		if err != nil {
			return nil, fmt.Errorf("bpf: line %d: %w", l.number, err)
		}
		prog = append(prog, ins)
	}
	return prog, nil
}

// line is an instruction's text and where it was read.
type line struct {
	number int
	text   string
}

// scan splits text into instruction lines, checks index prefixes and
// collects labels.
func scan(text string) ([]line, map[string]int, error) {
	var lines []line
	labels := map[string]int{}
	for n, raw := range strings.Split(text, "\n") {
		s, _, _ := strings.Cut(raw, ";")
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		head, rest, found := strings.Cut(s, ":")
		if found && isLabel(head) && strings.TrimSpace(rest) == "" {
			if _, dup := labels[head]; dup {
				return nil, nil, fmt.Errorf("bpf: line %d: label %q defined twice", n+1, head)
			}
			labels[head] = len(lines)
			continue
		}
		if found && isIndex(head) {
			if at, _ := strconv.Atoi(head); at != len(lines) {
				return nil, nil, fmt.Errorf("bpf: line %d: index %s, but the instruction is number %d", n+1, head, len(lines))
			}
			s = strings.TrimSpace(rest)
		}
		lines = append(lines, line{number: n + 1, text: s})
	}
	return lines, labels, nil
}

// isIndex reports whether s is an instruction index as Disassemble writes it.
func isIndex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// isLabel reports whether s can name a label: letters, digits, '_' and '.',
// not starting with a digit.
func isLabel(s string) bool {
	for i, c := range s {
		letter := c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// parser reads the instruction at index pc.
type parser struct {
	pc     int
	labels map[string]int
}

// instruction reads the text of one instruction: a mnemonic, then
// operands separated by commas.
func (p parser) instruction(s string) (Instruction, error) {
	mnemonic, rest := s, ""
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		mnemonic, rest = s[:i], s[i:]
	}
	args := splitArgs(rest)
	switch mnemonic {
	case "ld", "ldh", "ldb", "ldx", "st", "stx":
		return p.move(mnemonic, args)
	case "ja":
		if err := arity(args, 1); err != nil {
			return Instruction{}, err
		}
		off, err := p.target(args[0], 1<<32-1)
		return Ja(uint32(off)), err
	case "ret":
		return p.ret(args)
	case "neg", "tax", "txa":
		op := map[string]uint16{"neg": opNeg, "tax": opTax, "txa": opTxa}[mnemonic]
		return Instruction{Op: op}, arity(args, 0)
	case "raw":
		return p.raw(args)
	}
	for op, name := range aluNames {
		if name == mnemonic {
			return p.alu(op, args)
		}
	}
	for op, name := range jumpNames {
		if name == mnemonic {
			return p.jump(op, args)
		}
	}
	return Instruction{}, fmt.Errorf("unknown instruction %q", mnemonic)
}

// splitArgs splits the operands at commas; spaces inside one are dropped,
// so "[x + 4]" and "[x+4]" read the same.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	args := strings.Split(s, ",")
	for i, a := range args {
		args[i] = strings.Join(strings.Fields(a), "")
	}
	return args
}

// arity checks the number of operands.
func arity(args []string, n int) error {
	if len(args) != n {
		return fmt.Errorf("want %d operands, have %d", n, len(args))
	}
	return nil
}

// Operand forms of the loads and stores.
type form int

const (
	formLen form = iota // #len
	formImm             // #k
	formMem             // M[k]
	formAbs             // [k]
	formInd             // [x + k]
	formMsh             // 4*([k]&0xf)
)

// moves maps each load and store mnemonic to its forms and their opcodes.
var moves = map[string]map[form]uint16{
	"ld":  {formLen: opLdLen, formImm: opLdImm, formMem: opLdMem, formAbs: opLdAbsW, formInd: opLdIndW},
	"ldh": {formAbs: opLdAbsH, formInd: opLdIndH},
	"ldb": {formAbs: opLdAbsB, formInd: opLdIndB},
	"ldx": {formLen: opLdxLen, formImm: opLdxImm, formMem: opLdxMem, formMsh: opLdxMsh},
	"st":  {formMem: opSt},
	"stx": {formMem: opStx},
}

// move reads a load or a store.
func (p parser) move(mnemonic string, args []string) (Instruction, error) {
	if err := arity(args, 1); err != nil {
		return Instruction{}, err
	}
	f, k, ok := parseForm(args[0])
	op, has := moves[mnemonic][f]
	if !ok || !has {
		return Instruction{}, fmt.Errorf("%s has no operand form %q", mnemonic, args[0])
	}
	if f == formLen {
		return Instruction{Op: op}, nil
	}
	v, err := number(k)
	return Instruction{Op: op, K: v}, err
}

// parseForm recognizes the form of a load or store operand, with spaces
// already removed, and returns the text of its constant.
func parseForm(a string) (form, string, bool) {
	cut := func(prefix, suffix string) (string, bool) {
		if strings.HasPrefix(a, prefix) && strings.HasSuffix(a, suffix) && len(a) >= len(prefix)+len(suffix) {
			return a[len(prefix) : len(a)-len(suffix)], true
		}
		return "", false
	}
	if a == "#len" {
		return formLen, "", true
	}
	for _, f := range []struct {
		form           form
		prefix, suffix string
	}{
		{formImm, "#", ""},
		{formMem, "M[", "]"},
		{formMsh, "4*([", "]&0xf)"},
		{formInd, "[x+", "]"},
		{formAbs, "[", "]"},
	} {
		if k, ok := cut(f.prefix, f.suffix); ok {
			return f.form, k, true
		}
	}
	return 0, "", false
}

// operand reads #k or x, giving the source bit and the constant.
func operand(a string) (uint16, uint32, error) {
	if a == "x" {
		return SrcX, 0, nil
	}
	if !strings.HasPrefix(a, "#") {
		return 0, 0, fmt.Errorf("operand %q is neither #k nor x", a)
	}
	k, err := number(a[1:])
	return SrcK, k, err
}

func (p parser) alu(op uint16, args []string) (Instruction, error) {
	if err := arity(args, 1); err != nil {
		return Instruction{}, err
	}
	src, k, err := operand(args[0])
	return Instruction{Op: ClassAlu | op | src, K: k}, err
}

func (p parser) jump(op uint16, args []string) (Instruction, error) {
	if err := arity(args, 3); err != nil {
		return Instruction{}, err
	}
	src, k, err := operand(args[0])
	if err != nil {
		return Instruction{}, err
	}
	jt, err := p.target(args[1], MaxCondJump)
	if err != nil {
		return Instruction{}, err
	}
	jf, err := p.target(args[2], MaxCondJump)
	return Instruction{Op: ClassJmp | op | src, Jt: uint8(jt), Jf: uint8(jf), K: k}, err
}

// target reads a jump destination and returns its offset from the next
// instruction, which must lie in [0, limit].
func (p parser) target(s string, limit uint64) (uint64, error) {
	var abs uint64
	switch at, isLabel := p.labels[s]; {
	case isLabel:
		abs = uint64(at)
	case strings.HasPrefix(s, "+"):
		off, err := strconv.ParseUint(s[1:], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad relative target %q", s)
		}
		abs = uint64(p.pc) + 1 + off
	default:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("target %q is neither an index nor a known label", s)
		}
		abs = n
	}
	if abs <= uint64(p.pc) {
		return 0, fmt.Errorf("target %s is not after instruction %d: jumps only go forward", s, p.pc)
	}
	if off := abs - uint64(p.pc) - 1; off <= limit {
		return off, nil
	}
	return 0, fmt.Errorf("target %s is %d instructions past the next one; the limit is %d", s, abs-uint64(p.pc)-1, limit)
}

// ret reads ret #k, ret ACTION, ret ACTION(data), ret a and ret x.
func (p parser) ret(args []string) (Instruction, error) {
	if err := arity(args, 1); err != nil {
		return Instruction{}, err
	}
	switch a := args[0]; {
	case a == "a":
		return Instruction{Op: opRetA}, nil
	case a == "x":
		return Instruction{Op: opRetX}, nil
	case strings.HasPrefix(a, "#"):
		k, err := number(a[1:])
		return Ret(k), err
	default:
		k, ok := parseRet(a)
		if !ok {
			return Instruction{}, fmt.Errorf("unknown return value %q", a)
		}
		return Ret(k), nil
	}
}

// raw reads raw op, jt, jf, k: an instruction given field by field, with
// relative jump offsets.
func (p parser) raw(args []string) (Instruction, error) {
	if err := arity(args, 4); err != nil {
		return Instruction{}, err
	}
	var v [4]uint64
	for i, bits := range []int{16, 8, 8, 32} {
		n, err := strconv.ParseUint(args[i], 0, bits)
		if err != nil {
			return Instruction{}, fmt.Errorf("raw field %d: %q does not fit in %d bits", i, args[i], bits)
		}
		v[i] = n
	}
	return Instruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}, nil
}

// number reads a 32-bit constant in decimal or 0x-prefixed hexadecimal.
func number(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit number", s)
	}
	return uint32(n), nil
}
