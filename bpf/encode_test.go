package bpf

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		ins  Instruction
		want []byte
	}{
		{LoadAbs(OffsetArch), []byte{0x20, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00}},
		{Jump(JmpJeq, 0xc000003e, 1, 0x1f), []byte{0x15, 0x00, 0x01, 0x1f, 0x3e, 0x00, 0x00, 0xc0}},
		{Ret(retErrno | 1), []byte{0x06, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00}},
		{Instruction{Op: 0x1234, Jt: 0xfe, Jf: 0xff, K: 0x89abcdef}, []byte{0x34, 0x12, 0xfe, 0xff, 0xef, 0xcd, 0xab, 0x89}},
	} {
		if got := Encode([]Instruction{tc.ins}); !bytes.Equal(got, tc.want) {
			t.Errorf("Encode(%v) = % x, want % x", tc.ins, got, tc.want)
		}
		got, err := Decode(tc.want)
		if err != nil || !slices.Equal(got, []Instruction{tc.ins}) {
			t.Errorf("Decode(% x) = %v, %v, want %v", tc.want, got, err, tc.ins)
		}
	}
}

func TestDecodeLength(t *testing.T) {
	for _, n := range []int{1, 7, 9, 4097} {
		_, err := Decode(make([]byte, n))
		if want := fmt.Sprintf("%d bytes", n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode of %d bytes: %v, want an error containing %q", n, err, want)
		}
	}
	if prog, err := Decode(nil); err != nil || len(prog) != 0 {
		t.Errorf("Decode(nil) = %v, %v", prog, err)
	}
}

// TestLibseccompExport reads a filter that libseccomp 2.5.4 exported with
// seccomp_export_bpf (see testdata/README.md), checks its disassembly
// against the golden file, and that everything round-trips.
func TestLibseccompExport(t *testing.T) {
	raw, err := os.ReadFile("testdata/libseccomp_x86_64.bpf")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(prog); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Encode(prog), raw) {
		t.Fatal("Encode(Decode(export)) differs from the export")
	}
	text := Disassemble(prog)
	checkGolden(t, "testdata/libseccomp_x86_64.txt", text)
	back, err := Assemble(text)
	if err != nil || !slices.Equal(back, prog) {
		t.Fatalf("Assemble(Disassemble(export)) = %v, %v", back, err)
	}
}

// checkGolden compares got with the file at path, or rewrites the file
// under -update.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (run with -update to accept):\ngot\n%s\nwant\n%s", path, got, want)
	}
}
