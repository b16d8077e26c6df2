// Package unprivtest helps tests that run programs as another user (nobody):
// the go tool builds test binaries, and t.TempDir makes directories, where
// only their owner may enter.
package unprivtest

import (
	"os"
	"path/filepath"
	"testing"
)

// PublicDir makes a temporary directory every user may enter and read.
func PublicDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// CopyTestBinary copies the running test binary, under name, into a public
// directory removed when the test ends, and returns its path.
func CopyTestBinary(t *testing.T, name string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return CopyExecutable(t, exe, name)
}

// CopyExecutable copies the executable at src, under name, into a public
// directory removed when the test ends, and returns its path.
func CopyExecutable(t *testing.T, src, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := PublicDir(name + "-")
	if dir != "" {
		t.Cleanup(func() { os.RemoveAll(dir) })
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
