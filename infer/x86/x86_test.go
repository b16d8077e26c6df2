package x86

import (
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected facts in testdata")

// TestRead assembles each function of testdata/functions.txtar (NAME.s,
// whose function f is read) and compares what Read finds with NAME.want.
// A function named die never returns.
func TestRead(t *testing.T) {
	if _, err := exec.LookPath("as"); err != nil {
		t.Skipf("SKIPPED: no assembler (binutils) to build the test functions: %v", err)
	}
	path := filepath.Join("testdata", "functions.txtar")
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for i := range ar.Files {
		f := &ar.Files[i]
		name, ok := strings.CutSuffix(f.Name, ".s")
		if !ok {
			continue
		}
		got := readFunction(t, name, f.Data)
		want := findFile(ar, name+".want")
		if *update {
			changed = setFile(ar, name+".want", got) || changed
			continue
		}
		if want == nil {
			t.Errorf("%s: no %s.want", name, name)
			continue
		}
		if string(want.Data) != got {
			t.Errorf("%s: facts differ\n--- got\n%s--- want\n%s", name, got, want.Data)
		}
	}
	if changed {
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findFile(ar *txtar.Archive, name string) *txtar.File {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			return &ar.Files[i]
		}
	}
	return nil
}

func setFile(ar *txtar.Archive, name, data string) bool {
	if f := findFile(ar, name); f != nil {
		if string(f.Data) == data {
			return false
		}
		f.Data = []byte(data)
		return true
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
	return true
}

// readFunction assembles src and dumps the facts of its function f.
func readFunction(t *testing.T, name string, src []byte) string {
	t.Helper()
	a := assemble(t, name, src)
	fn := Decode(a.code, a.entry).Read(a.entry, a.env, false)
	return dump(fn, a.names)
}

// assembled is a test function: its code, from f's entry to the next
// symbol, how to read it, and the names of its addresses.
type assembled struct {
	code  []byte
	entry uint64
	env   *Env
	names map[uint64]string
}

// assemble assembles src, whose function f is the one to read.
func assemble(t *testing.T, name string, src []byte) assembled {
	t.Helper()
	dir := t.TempDir()
	s, o := filepath.Join(dir, name+".s"), filepath.Join(dir, name+".o")
	if err := os.WriteFile(s, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("as", "--64", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("%s: as: %v\n%s", name, err, out)
	}
	ef, err := elf.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	code, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x1000
	names := map[uint64]string{}
	for _, sym := range syms {
		if sym.Section < elf.SectionIndex(len(ef.Sections)) && ef.Sections[sym.Section] == text && sym.Name != "" {
			names[base+sym.Value] = sym.Name
		}
	}
	entry, die := uint64(0), uint64(0)
	for addr, n := range names {
		switch n {
		case "f":
			entry = addr
		case "die":
			die = addr
		}
	}
	if entry == 0 {
		t.Fatalf("%s: no function f", name)
	}
	// f's code ends where the next symbol starts, as a function's ends
	// where the next FDE starts.
	end := base + uint64(len(code))
	for addr := range names {
		if addr > entry && addr < end {
			end = addr
		}
	}
	// From a symbol named data on, the text is data.
	codeEnd := base + uint64(len(code))
	for addr, n := range names {
		if n == "data" {
			codeEnd = addr
		}
	}
	isCode := func(a uint64) bool { return a >= base && a < codeEnd }
	word := func(a uint64, size int) (uint64, bool) {
		if a < base || a+uint64(size) > base+uint64(len(code)) {
			return 0, false
		}
		var w uint64
		for i := size - 1; i >= 0; i-- {
			w = w<<8 | uint64(code[a-base+uint64(i)])
		}
		return w, true
	}
	env := &Env{IsCode: isCode, NoReturn: func(a uint64) bool { return a == die && die != 0 }, Word: word}
	return assembled{code: code[entry-base : end-base], entry: entry, env: env, names: names}
}

// dump writes a function's facts, addresses as symbol+offset.
func dump(fn *Function, names map[uint64]string) string {
	at := func(a uint64) string { return symbolic(a, names) }
	var b strings.Builder
	for _, s := range fn.Syscalls {
		abi := "syscall"
		if s.ABI == I386 {
			abi = "int80"
		}
		fmt.Fprintf(&b, "%s %s nr=%v%s\n", abi, at(s.Addr), valueString(s.Nr, names), guardString(s.Guard))
	}
	for _, c := range fn.Calls {
		kind := "call"
		if c.Tail {
			kind = "jump"
		}
		target := valueString(c.Ptr, names)
		if c.Direct {
			target = at(c.Target)
		}
		fmt.Fprintf(&b, "%s %s -> %s args=%s", kind, at(c.Addr), target, argsString(c.Args, names))
		for _, f := range c.Fields {
			fmt.Fprintf(&b, " %s%+d=%s", argNames[f.Arg], f.Offset, valueString(f.Value, names))
		}
		b.WriteString(guardString(c.Guard))
		b.WriteByte('\n')
	}
	for _, r := range fn.Refs {
		fmt.Fprintf(&b, "ref %s\n", at(r))
	}
	for _, r := range fn.Data {
		fmt.Fprintf(&b, "data %s\n", at(r))
	}
	for _, r := range fn.Reads {
		fmt.Fprintf(&b, "reads %s\n", at(r))
	}
	for _, s := range fn.Stores {
		fmt.Fprintf(&b, "store %s = %s\n", valueString(s.Dest, names), valueString(s.Value, names))
	}
	for _, m := range fn.Mangles {
		fmt.Fprintf(&b, "mangle %s\n", valueString(m, names))
	}
	for _, c := range fn.Checks {
		fmt.Fprintf(&b, "check %s - %s\n", valueString(c.Value, names), at(c.Against))
	}
	for _, r := range fn.Results {
		fmt.Fprintf(&b, "result %s\n", valueString(r, names))
	}
	fmt.Fprintf(&b, "returns %v\n", fn.Returns)
	return b.String()
}

// guardString writes a fact's Guard, if it has one.
func guardString(g Guard) string {
	if g.Mask == 0 {
		return ""
	}
	return " if " + g.String()
}

func argsString(args [6]Value, names map[uint64]string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = valueString(a, names)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// valueString writes a value with addresses as symbols, and instruction
// addresses (Ret, Loaded) as offsets.
func valueString(v Value, names map[uint64]string) string {
	switch v.Kind {
	case Const:
		parts := make([]string, len(v.Consts))
		for i, c := range v.Consts {
			if _, ok := names[c]; ok || c >= 0x1000 && c < 0x100000 {
				parts[i] = symbolic(c, names)
			} else {
				parts[i] = fmt.Sprintf("%#x", c)
			}
		}
		return strings.Join(parts, "|")
	case Ret, Loaded:
		out := fmt.Sprintf("%s@%s", map[Kind]string{Ret: "ret", Loaded: "loaded"}[v.Kind], symbolic(v.Consts[0], names))
		if a, ok := v.Origin(); ok && v.Kind == Loaded {
			out += " from ret@" + symbolic(a, names)
		}
		return out
	case Found:
		return "found from ret@" + symbolic(v.Consts[0], names)
	case Out:
		return "out@" + symbolic(v.Consts[0], names)
	case Slot:
		return "[" + symbolic(v.Consts[0], names) + "]"
	case Field:
		if b := v.Base(); b.Kind != Param {
			return valueString(b, names) + fmt.Sprint(v.Path())
		}
	}
	return v.String()
}

// symbolic names an address by the closest symbol at or before it.
func symbolic(a uint64, names map[uint64]string) string {
	var addrs []uint64
	for s := range names {
		addrs = append(addrs, s)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	best := ""
	var off uint64
	for _, s := range addrs {
		if s <= a {
			best, off = names[s], a-s
		}
	}
	if best == "" {
		return fmt.Sprintf("%#x", a)
	}
	if off == 0 {
		return best
	}
	return fmt.Sprintf("%s+%#x", best, off)
}
