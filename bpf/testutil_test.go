package bpf

import (
	"os"
	"strings"
	"testing"
)

// section is one named text of a test archive.
type section struct {
	name string
	text string
}

// readArchive reads a test archive: texts, each after a header line
// "-- name --". Lines before the first header describe the archive.
func readArchive(t *testing.T, path string) []section {
	t.Helper()
	_, sections := readArchiveWithHeader(t, path)
	return sections
}

// readArchiveWithHeader also returns the description.
func readArchiveWithHeader(t *testing.T, path string) (string, []section) {
	t.Helper()
	var header string
	var sections []section
	for _, line := range strings.SplitAfter(string(mustRead(t, path)), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "-- "); ok && strings.HasSuffix(name, " --") {
			sections = append(sections, section{name: strings.TrimSuffix(name, " --")})
			continue
		}
		if len(sections) > 0 {
			sections[len(sections)-1].text += line
		} else {
			header += line
		}
	}
	if len(sections) == 0 {
		t.Fatalf("%s: no sections", path)
	}
	return header, sections
}

// writeArchive writes what readArchiveWithHeader reads.
func writeArchive(t *testing.T, path, header string, sections []section) {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	for _, s := range sections {
		b.WriteString("-- " + s.name + " --\n" + s.text)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustRead reads a file or stops the test.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustAssemble assembles test text or stops the test.
func mustAssemble(t *testing.T, text string) []Instruction {
	t.Helper()
	prog, err := Assemble(text)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// directive returns the value of the first comment line "; key: value" in
// text.
func directive(text, key string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "; "+key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}
