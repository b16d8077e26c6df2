package attribute

import (
	"debug/elf"
	"maps"
	"testing"
)

// machineObjects are objects of the machine the linkage's readers are
// checked on against debug/elf's: a library, the largest a server loads,
// an executable, and the loader.
var machineObjects = []string{
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
	"/usr/bin/openssl",
	"/usr/lib64/ld-linux-x86-64.so.2",
}

// eachObject runs check on each of machineObjects the machine has,
// logging the others as skipped.
func eachObject(t *testing.T, check func(path string, f *elf.File)) {
	for _, path := range machineObjects {
		f, err := elf.Open(path)
		if err != nil {
			t.Logf("SKIPPED %s: %v", path, err)
			continue
		}
		check(path, f)
		f.Close()
	}
}

// TestDefines checks the lookup of exported functions through .gnu.hash
// against debug/elf's reading of every dynamic symbol, on objects of the
// machine: each function an object defines is found, and no name it only
// imports, or that it does not have, is.
func TestDefines(t *testing.T) {
	eachObject(t, func(path string, f *elf.File) {
		l := readExports(f)
		if l.hash == nil {
			t.Errorf("%s: its .gnu.hash was not taken", path)
		}
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatal(err)
		}
		defined := map[string]bool{}
		for _, s := range syms {
			want := elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF
			if want {
				defined[s.Name] = true
			}
			if want && !l.defines(s.Name) {
				t.Errorf("%s: %s not found", path, s.Name)
			}
			if !want && s.Section == elf.SHN_UNDEF && l.defines(s.Name) {
				t.Errorf("%s: imported %s taken for a definition", path, s.Name)
			}
		}
		for _, name := range []string{"", "no_such_function_anywhere", "printf_but_not"} {
			if l.defines(name) {
				t.Errorf("%s: %q found", path, name)
			}
		}
		// Every function, read entry by entry and read at once.
		for how, got := range map[string]map[string]bool{"from the file": l.syms.functions(), "in memory": l.syms.inMemory().functions()} {
			if !maps.Equal(got, defined) {
				t.Errorf("%s: %d functions %s, debug/elf reads %d", path, len(got), how, len(defined))
			}
		}
	})
}

// TestSymbolRange checks the range of libc's __libc_start_main, found
// through .gnu.hash, against debug/elf's reading of every symbol.
func TestSymbolRange(t *testing.T) {
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(libc)
	if err != nil {
		t.Skipf("SKIPPED: %v", err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	var want [2]uint64
	for _, s := range syms {
		if s.Name == startMainSymbol && s.Section != elf.SHN_UNDEF {
			want = [2]uint64{s.Value, s.Value + s.Size}
			break
		}
	}
	if got := symbolRange(f, startMainSymbol); got != want || want[1] == 0 {
		t.Errorf("%s: got %#x, want %#x", startMainSymbol, got, want)
	}
	if got := symbolRange(f, "no_such_function_anywhere"); got != [2]uint64{} {
		t.Errorf("a name libc lacks: got %#x", got)
	}
}

// TestSoname checks the soname read where DT_SONAME points against
// debug/elf's reading of the whole .dynstr, on objects of the machine
// with one and without.
func TestSoname(t *testing.T) {
	eachObject(t, func(path string, f *elf.File) {
		want := ""
		if names, err := f.DynString(elf.DT_SONAME); err == nil && len(names) > 0 {
			want = names[0]
		}
		if got := soname(f); got != want {
			t.Errorf("%s: soname %q, want %q", path, got, want)
		}
	})
}
