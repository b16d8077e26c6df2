package cell

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dynamic, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("SKIPPED: no /bin/true to copy: %v", err)
	}
	setuid := write("setuid", string(dynamic), os.ModeSetuid|0o755)
	for _, tc := range []struct {
		name, path string
		err        error
		msg        string
	}{
		{"dynamic", "/bin/true", nil, ""},
		{"script", write("script", "#!/bin/sh -e\nexit 0\n", 0o755), nil, ""},
		{"static", "/sbin/ldconfig", ErrNotAuditable, "statically linked"},
		{"script of a static interpreter", write("static-script", "#!/sbin/ldconfig\n", 0o755), ErrNotAuditable, "statically linked"},
		{"set-user-ID", setuid, ErrNotAuditable, "set-user-ID"},
		{"no interpreter", write("empty", "#!\n", 0o755), nil, "names no interpreter"},
		{"interpreter loop", write("loop", "#!"+filepath.Join(dir, "loop")+"\n", 0o755), nil, "interpreters"},
		{"not a program", write("text", "hello\n", 0o755), nil, "neither an ELF program nor"},
		{"a truncated ELF header", write("truncated", string(dynamic[:40]), 0o755), nil, "neither an ELF program nor"},
		{"program headers past the end", write("cut", string(dynamic[:64]), 0o755), nil, "program headers"},
	} {
		err := checkExecutable(tc.path)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.msg)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: %v, want it to wrap %v", tc.name, err, tc.err)
		}
	}
}

// TestCheckExecuted: under no_new_privs a set-user-ID program raises no
// privilege, so an image the program executes may be one; a static one
// still may not.
func TestCheckExecuted(t *testing.T) {
	dynamic, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("SKIPPED: no /bin/true to copy: %v", err)
	}
	setuid := filepath.Join(t.TempDir(), "setuid")
	if err := os.WriteFile(setuid, dynamic, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(setuid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := checkExecuted("/", setuid); err != nil {
		t.Errorf("set-user-ID: %v", err)
	}
	if _, err := checkExecuted("/", "/sbin/ldconfig"); !errors.Is(err, ErrNotAuditable) {
		t.Errorf("static: %v, want it to wrap %v", err, ErrNotAuditable)
	}
}
