package enforce

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShimPath checks that Run starts the shim's own binary only where an
// executable file of that name lies next to the running binary.
func TestShimPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		found bool
	}{
		{"none", func(*testing.T, string) {}, false},
		{"executable", func(t *testing.T, path string) { write(t, path, 0o755) }, true},
		{"not executable", func(t *testing.T, path string) { write(t, path, 0o644) }, false},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			exe := filepath.Join(dir, "syscell")
			tc.make(t, filepath.Join(dir, ShimName))
			want := exe
			if tc.found {
				want = filepath.Join(dir, ShimName)
			}
			if got := shimPath(exe); got != want {
				t.Errorf("shimPath(%s) = %s, want %s", exe, got, want)
			}
		})
	}
}

func write(t *testing.T, path string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), perm); err != nil {
		t.Fatal(err)
	}
}
