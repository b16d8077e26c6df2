package image

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// buildLib builds testdata/lib.c as a shared library with extra linker
// flags.
func buildLib(t *testing.T, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("SKIPPED: no gcc to build the test library: %v", err)
	}
	out := filepath.Join(t.TempDir(), "lib.so")
	args := append([]string{"-O2", "-fomit-frame-pointer", "-shared", "-fPIC", "-o", out, "testdata/lib.c"}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, b)
	}
	return out
}

// TestRead checks what Open reads of a library built three ways: the
// relocations (RELA and RELR), symbols, binding and sections.
func TestRead(t *testing.T) {
	for _, tt := range []struct {
		name    string
		flags   []string
		bindNow bool
	}{
		{"lazy", nil, false},
		{"now", []string{"-Wl,-z,now"}, true},
		{"relr", []string{"-Wl,-z,pack-relative-relocs"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			img, err := Open(buildLib(t, tt.flags...))
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, tt.bindNow)
		})
	}
}

func checkImage(t *testing.T, img *Image, bindNow bool) {
	t.Helper()
	if img.BuildID == "" || img.Type != elf.ET_DYN || img.BindNow != bindNow {
		t.Errorf("build-id %q, type %v, bind now %v; want a build-id, ET_DYN, %v", img.BuildID, img.Type, img.BindNow, bindNow)
	}
	if _, ok := img.Exports["api"]; !ok {
		t.Errorf("exports lack api: %v", keys(img.Exports))
	}
	if _, ok := img.Exports["local_fn"]; ok {
		t.Error("a static function is exported")
	}
	if _, ok := img.Data["exported_data"]; !ok {
		t.Errorf("data lack exported_data: %v", img.Data)
	}
	var locals []uint64
	symbols := map[string]Word{}
	for addr, w := range img.Words {
		switch w.Kind {
		case Local:
			if img.IsCode(w.Addr) {
				locals = append(locals, addr)
			}
		case Symbol:
			symbols[w.Name] = w
		}
	}
	// table, fixed and the constructor in .init_array point to code.
	if len(locals) < 3 {
		t.Errorf("%d relocated words point to code, want at least 3", len(locals))
	}
	readOnly := 0
	for _, a := range locals {
		if isReadOnly(img, a) {
			readOnly++
		}
	}
	if readOnly == 0 || readOnly == len(locals) {
		t.Errorf("%d of %d words that point to code are read-only: want fixed's, not table's", readOnly, len(locals))
	}
	if w, ok := symbols["getpid"]; !ok || w.Call {
		t.Errorf("getpid's address in data: %+v, %v", w, ok)
	}
	if w, ok := symbols["getppid"]; !ok || !w.Call {
		t.Errorf("getppid's GOT slot: %+v, %v", w, ok)
	}
	if !slices.ContainsFunc(img.Sections, func(s Section) bool { return s.Name == ".init_array" }) {
		t.Error("no .init_array section")
	}
	if len(img.InitFini) == 0 {
		t.Error("no DT_INIT or DT_FINI")
	}
	for _, fn := range img.Functions {
		if fn.End <= fn.Start || fn.End > img.CodeEnd(fn.Start) {
			t.Errorf("function at %#x ends at %#x", fn.Start, fn.End)
		}
	}
}

func isReadOnly(img *Image, addr uint64) bool {
	for _, r := range img.ReadOnly {
		if addr >= r.Start && addr < r.End {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestNotX86_64 checks that a file of another machine is refused as such,
// which the loader's search relies on to skip it.
func TestNotX86_64(t *testing.T) {
	data, err := os.ReadFile(buildLib(t))
	if err != nil {
		t.Fatal(err)
	}
	data[18] = byte(elf.EM_AARCH64)
	path := filepath.Join(t.TempDir(), "other.so")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) error{
		func(p string) error { _, err := Open(p); return err },
		func(p string) error { _, err := OpenDynamic(p); return err },
	} {
		if err := open(path); !errors.Is(err, ErrNotX86_64) {
			t.Errorf("open an aarch64 object: %v, want ErrNotX86_64", err)
		}
	}
}
