package cell_test

import (
	"debug/elf"
	"path/filepath"
	"testing"
)

// TestLibraryNeedsNoLibc checks that the audit library brings its own
// runtime (audit/rt.h): a library it needs would be loaded into its
// namespace again in every image the program executes, libc's every
// open, read and map a call the supervisor decides. The loader alone,
// in every namespace already, may be named.
func TestLibraryNeedsNoLibc(t *testing.T) {
	path := filepath.Join(fixtures(t), auditLib)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if lib != "ld-linux-x86-64.so.2" {
			t.Errorf("%s needs %s (DT_NEEDED): its namespace would load it in every executed image", path, lib)
		}
	}
}
