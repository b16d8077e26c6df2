package shebang

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProgram(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	env := write("env-script", "#!/usr/bin/env sh\necho\n")
	chained := write("chained", "#!"+env+" -x\n")
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"an ELF program", "/bin/true", "/bin/true", ""},
		{"a script", write("script", "#!/bin/sh -e\nexit 0\n"), "/bin/sh", ""},
		{"#! with spaces", write("spaced", "#!  /bin/sh\n"), "/bin/sh", ""},
		{"env", env, "/usr/bin/env", ""},
		{"a script run by a script", chained, "/usr/bin/env", ""},
		{"no interpreter", write("empty", "#!\n"), "", "names no interpreter"},
		{"a loop", write("loop", "#!"+filepath.Join(dir, "loop")+"\n"), "", "interpreters"},
		{"text", write("text", "hello\n"), write("text", "hello\n"), ""},
		{"missing", filepath.Join(dir, "missing"), "", "no such file"},
		{"a missing interpreter", write("orphan", "#!/nonexistent/sh\n"), "", "orphan: #! interpreter: open /nonexistent/sh: no such file"},
	} {
		got, err := Program("", tc.path)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %q, %v; want an error with %q", tc.name, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
