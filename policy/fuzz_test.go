package policy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func addVectors(f *testing.F, patterns ...string) {
	for _, pattern := range patterns {
		files, _ := filepath.Glob(filepath.Join("testdata", pattern))
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// FuzzParse checks that Parse fails only with *Error, and that what it
// accepts WriteTOML writes in a form Parse accepts and writes identically.
func FuzzParse(f *testing.F) {
	addVectors(f, "*.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.toml", data)
		var perr *Error
		if err != nil {
			if !errors.As(err, &perr) {
				t.Fatalf("Parse error %v is a %T, not *Error", err, err)
			}
			return
		}
		var first, second bytes.Buffer
		if err := p.WriteTOML(&first); err != nil {
			t.Fatalf("WriteTOML of a parsed policy: %v", err)
		}
		again, err := Parse("written.toml", first.Bytes())
		if err != nil {
			t.Fatalf("Parse of WriteTOML's output: %v\n%s", err, first.Bytes())
		}
		if err := again.WriteTOML(&second); err != nil || second.String() != first.String() {
			t.Fatalf("WriteTOML not stable (err %v):\n%s\nthen\n%s", err, first.Bytes(), second.Bytes())
		}
	})
}

// FuzzParseOCI checks that ParseOCI fails only with *Error.
func FuzzParseOCI(f *testing.F) {
	addVectors(f, "*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, err := ParseOCI("fuzz.json", data, dockerDefaults)
		var perr *Error
		if err != nil && !errors.As(err, &perr) {
			t.Fatalf("ParseOCI error %v is a %T, not *Error", err, err)
		}
	})
}
