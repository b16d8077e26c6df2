package unwind_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/syscell/syscell/unwind"
)

// TestCursor unwinds the stacks of testdata/cursor: each archive gives the
// FDEs of one object (start, end, instructions in hex; "S" first marks a
// signal trampoline), the entry registers, the stack's words, and the
// frames, the end (eof or error) and the inputs the unwind must read.
func TestCursor(t *testing.T) {
	files, err := filepath.Glob("testdata/cursor/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			v := readCursorVector(t, file)
			got := unwindAll(v)
			if got != v.want {
				t.Errorf("unwind:\n%s\nwant:\n%s", got, v.want)
			}
		})
	}
}

type cursorVector struct {
	table *unwind.Table
	regs  unwind.Regs
	stack *unwind.Stack
	want  string
}

// unwindAll writes each frame's pc, how the unwind ended and its inputs, in
// the vectors' form.
func unwindAll(v *cursorVector) string {
	c := unwind.NewCursor(&v.regs, v.stack, finder{v.table})
	var b strings.Builder
	for {
		fmt.Fprintf(&b, "%#x", c.PC())
		if c.CallSite() == c.PC() {
			b.WriteString(" exact")
		}
		b.WriteByte('\n')
		err := c.Next()
		if errors.Is(err, io.EOF) {
			b.WriteString("eof\n")
			break
		}
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
			break
		}
	}
	b.WriteString("inputs:")
	for _, in := range c.Inputs() {
		fmt.Fprintf(&b, " %s", in)
	}
	return b.String()
}

// finder serves one table at bias zero.
type finder struct{ t *unwind.Table }

func (f finder) Table(pc uint64) (*unwind.Table, uint64, error) { return f.t, 0, nil }

func readCursorVector(t *testing.T, file string) *cursorVector {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, f := range ar.Files {
		sections[f.Name] = string(f.Data)
	}
	v := &cursorVector{want: strings.TrimSpace(sections["want"])}
	v.table = buildTable(t, sections["fdes"])
	for _, field := range strings.Fields(sections["regs"]) {
		name, val, _ := strings.Cut(field, "=")
		v.regs[regNumber(t, name)] = number(t, val)
	}
	v.stack = buildStack(t, sections["stack"], v.regs[unwind.RSP])
	return v
}

func regNumber(t *testing.T, name string) unwind.Reg {
	for r := range unwind.NumRegs {
		if unwind.Reg(r).String() == name {
			return unwind.Reg(r)
		}
	}
	t.Fatalf("unknown register %q", name)
	return 0
}

func number(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// buildStack lays out "ADDR: WORD..." lines into a stack copy starting at
// sp; unlisted words are zero.
func buildStack(t *testing.T, text string, sp uint64) *unwind.Stack {
	s := &unwind.Stack{Addr: sp}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		addr, words, _ := strings.Cut(line, ":")
		off := number(t, addr) - sp
		for i, w := range strings.Fields(words) {
			end := int(off) + 8*(i+1)
			if end > len(s.Data) {
				s.Data = append(s.Data, make([]byte, end-len(s.Data))...)
			}
			binary.LittleEndian.PutUint64(s.Data[end-8:], number(t, w))
		}
	}
	return s
}

// ehFrameAddr is where the synthetic .eh_frame lies.
const ehFrameAddr = 0x100000

// buildTable assembles an .eh_frame: the usual x86_64 CIE (zR, pcrel
// sdata4 addresses, CFA rsp+8, ra at CFA-8), a signal trampoline CIE (zRS)
// and one FDE per line.
func buildTable(t *testing.T, text string) *unwind.Table {
	t.Helper()
	initial := []byte{0x0c, 0x07, 0x08, 0x90, 0x01}
	frame := cieRecord("zR", initial)
	signalCIE := len(frame)
	frame = append(frame, cieRecord("zRS", initial)...)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		fields := strings.Fields(line)
		start, end := number(t, fields[0]), number(t, fields[1])
		cie, instr := 0, fields[2:]
		if len(instr) > 0 && instr[0] == "S" {
			cie, instr = signalCIE, instr[1:]
		}
		code, err := hex.DecodeString(strings.Join(instr, ""))
		if err != nil {
			t.Fatal(err)
		}
		frame = append(frame, fdeRecord(len(frame), cie, start, end, code)...)
	}
	table, err := unwind.NewTable(frame, ehFrameAddr, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func cieRecord(aug string, initial []byte) []byte {
	body := []byte{0, 0, 0, 0, 1}
	body = append(body, aug...)
	body = append(body, 0, 1, 0x78, 16, 1, 0x1b)
	body = append(body, initial...)
	return record(body)
}

// fdeRecord encodes an FDE at offset off whose CIE is at offset cie.
func fdeRecord(off, cie int, start, end uint64, code []byte) []byte {
	body := binary.LittleEndian.AppendUint32(nil, uint32(off+4-cie))
	pcField := uint64(ehFrameAddr + off + 8)
	body = binary.LittleEndian.AppendUint32(body, uint32(start-pcField))
	body = binary.LittleEndian.AppendUint32(body, uint32(end-start))
	body = append(body, 0)
	body = append(body, code...)
	return record(body)
}

// record prefixes a body with its length, padded to 4 bytes with nops.
func record(body []byte) []byte {
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestStackHoles checks reads around the parts of a stack copy that could
// not be read: a word that touches a hole by a byte fails, its neighbours
// do not, and a hole is not mistaken for the end of the copy.
func TestStackHoles(t *testing.T) {
	const sp = 0x7ffd0f00
	s := &unwind.Stack{Addr: sp, Data: make([]byte, 0x2200), Holes: []unwind.Hole{{Start: sp + 0x100, End: sp + 0x1100}}}
	binary.LittleEndian.PutUint64(s.Data[0xf8:], 0x1234)
	binary.LittleEndian.PutUint64(s.Data[0x1100:], 0x5678)
	for _, c := range []struct {
		addr uint64
		want uint64
		err  error
	}{
		{sp, 0, nil},
		{sp + 0xf8, 0x1234, nil},
		{sp + 0xf9, 0, unwind.ErrStackHole},
		{sp + 0x100, 0, unwind.ErrStackHole},
		{sp + 0x10f8, 0, unwind.ErrStackHole},
		{sp + 0x10f9, 0, unwind.ErrStackHole},
		{sp + 0x1100, 0x5678, nil},
		{sp + 0x21f8, 0, nil},
		{sp + 0x21f9, 0, unwind.ErrOutsideStack},
		{sp - 8, 0, unwind.ErrOutsideStack},
	} {
		got, err := s.Word(c.addr)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("word at sp%+d: %#x, %v; want %v", int64(c.addr-sp), got, err, c.err)
			}
			if c.err == unwind.ErrStackHole && errors.Is(err, unwind.ErrOutsideStack) {
				t.Errorf("word at sp%+d: a hole read as outside the copy: %v", int64(c.addr-sp), err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("word at sp%+d: %#x, %v; want %#x", int64(c.addr-sp), got, err, c.want)
		}
	}
}
