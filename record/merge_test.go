package record

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMerge merges the recordings of each testdata/merge directory, in
// every order, and compares the policy with its want.toml (go test
// -update rewrites them).
func TestMerge(t *testing.T) {
	dirs, err := filepath.Glob("testdata/merge/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			recs := loadInputs(t, dir)
			var first []byte
			for _, order := range orders(len(recs)) {
				var shuffled []*Recording
				for _, i := range order {
					shuffled = append(shuffled, recs[i])
				}
				var got bytes.Buffer
				if err := Merge(shuffled...).WriteTOML(&got); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = got.Bytes()
				} else if !bytes.Equal(first, got.Bytes()) {
					t.Fatalf("order %v gives another policy:\n%s", order, got.Bytes())
				}
			}
			golden(t, filepath.Join(dir, "want.toml"), first)
		})
	}
}

// loadInputs loads every file of dir but want.toml.
func loadInputs(t *testing.T, dir string) []*Recording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*Recording
	for _, f := range files {
		if filepath.Base(f) == "want.toml" {
			continue
		}
		rec, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// orders lists every permutation of 0..n-1.
func orders(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, rest := range orders(n - 1) {
		for i := 0; i <= len(rest); i++ {
			out = append(out, slices.Insert(slices.Clone(rest), i, n-1))
		}
	}
	return out
}

// golden compares got with the file at path, which -update rewrites.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}
