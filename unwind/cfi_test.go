package unwind

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestRows interprets the CFI programs of testdata/rows.txt.
func TestRows(t *testing.T) {
	for _, v := range readRowVectors(t, "testdata/rows.txt") {
		t.Run(v.name, func(t *testing.T) {
			c := &cie{codeAlign: 1, dataAlign: -8, raReg: uint64(RA), initial: v.initial}
			fde := &FDE{Start: 0x1000, End: 0x1100, cie: c, instructions: v.instructions}
			row, err := RowIn(fde, v.pc)
			if wantErr, ok := strings.CutPrefix(v.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Errorf("row at %#x: error %v, want one containing %q", v.pc, err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := row.String(); got != v.want {
				t.Errorf("row at %#x = %q, want %q", v.pc, got, v.want)
			}
		})
	}
}

type rowVector struct {
	name                  string
	initial, instructions []byte
	pc                    uint64
	want                  string
}

func readRowVectors(t *testing.T, path string) []rowVector {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []rowVector
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		fields := strings.Split(text, "|")
		if len(fields) != 5 {
			t.Fatalf("%s:%d: want 5 fields separated by |", path, line)
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		pc, err := strconv.ParseUint(fields[3], 0, 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		vs = append(vs, rowVector{name: fields[0], initial: hexBytes(t, fields[1]), instructions: hexBytes(t, fields[2]), pc: pc, want: fields[4]})
	}
	return vs
}

// hexBytes decodes hex digits, ignoring spaces.
func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b
}
