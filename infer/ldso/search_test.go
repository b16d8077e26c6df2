package ldso

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build compiles testdata/src into out with gcc.
func build(t *testing.T, out, src string, args ...string) {
	t.Helper()
	all := append([]string{"-O2", "-o", out, filepath.Join("testdata", src)}, args...)
	if b, err := exec.Command("gcc", all...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", all, err, b)
	}
}

// tree builds libb.so in each of libDirs, liba.so (with liba's flags) in
// the first, and the program in root with progFlags.
func tree(t *testing.T, root string, libDirs []string, aFlags, progFlags []string) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("SKIPPED: no gcc to build the test programs: %v", err)
	}
	for _, d := range libDirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		build(t, filepath.Join(d, "libb.so"), "b.c", "-shared", "-fPIC")
	}
	build(t, filepath.Join(libDirs[0], "liba.so"), "a.c", append([]string{"-shared", "-fPIC", "-L" + libDirs[0], "-lb"}, aFlags...)...)
	prog := filepath.Join(root, "prog")
	build(t, prog, "prog.c", append([]string{"-L" + libDirs[0], "-la"}, progFlags...)...)
	return prog
}

func search(t *testing.T, env ...string) *Search {
	t.Helper()
	s, err := FromEnv(env, "/etc/ld.so.cache")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// names are the base names of objects, and their directories relative
// to root.
func names(root string, objs []*Object) []string {
	var out []string
	for _, o := range objs {
		rel, err := filepath.Rel(root, o.Path)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = filepath.Base(o.Path)
		}
		out = append(out, rel)
	}
	return out
}

// TestLoad checks the loader's search order on small programs.
func TestLoad(t *testing.T) {
	root := t.TempDir()
	lib, other := filepath.Join(root, "lib"), filepath.Join(root, "other")
	tests := []struct {
		name      string
		aFlags    []string
		progFlags []string
		env       []string
		want      string
		err       error
	}{{
		// Breadth-first: the program needs liba.so and libc.so.6, then
		// liba.so libb.so through its own $ORIGIN.
		name:      "runpath $ORIGIN",
		progFlags: []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib", "-Wl,-rpath-link," + lib},
		aFlags:    []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN"},
		want:      "prog lib/liba.so libc.so.6 lib/libb.so ld-linux-x86-64.so.2",
	}, {
		// The executable's DT_RUNPATH is its own: liba.so, which has
		// none, cannot find libb.so through it.
		name:      "runpath is not inherited",
		progFlags: []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib", "-Wl,-rpath-link," + lib},
		err:       ErrNotFound,
		want:      "no-libb",
	}, {
		// The executable's DT_RPATH serves every object without a
		// DT_RUNPATH.
		name:      "rpath is inherited",
		progFlags: []string{"-Wl,--disable-new-dtags,-rpath,$ORIGIN/lib", "-Wl,-rpath-link," + lib},
		want:      "prog lib/liba.so libc.so.6 lib/libb.so ld-linux-x86-64.so.2",
	}, {
		// LD_LIBRARY_PATH comes before DT_RUNPATH.
		name:      "library path first",
		progFlags: []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib", "-Wl,-rpath-link," + lib},
		aFlags:    []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN"},
		env:       []string{"LD_LIBRARY_PATH=" + other},
		want:      "prog lib/liba.so libc.so.6 other/libb.so ld-linux-x86-64.so.2",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.RemoveAll(lib)
			os.RemoveAll(other)
			prog := tree(t, root, []string{lib, other}, tt.aFlags, tt.progFlags)
			if tt.want == "no-libb" {
				os.Remove(filepath.Join(other, "libb.so"))
				// libb.so in lib/ is reachable only through liba's
				// DT_RUNPATH, which it lacks.
			}
			objs, err := search(t, tt.env...).Load(prog, nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Load: %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(root, objs), " "); got != tt.want {
				t.Errorf("loads %s\nwant %s", got, tt.want)
			}
			if last := objs[len(objs)-1]; !last.Interp {
				t.Errorf("%s is not marked as the interpreter", last.Path)
			}
		})
	}
}

// TestSkipOtherMachine checks that a library of another machine found
// first is skipped for the next one, as the loader skips it.
func TestSkipOtherMachine(t *testing.T) {
	root := t.TempDir()
	first, second := filepath.Join(root, "first"), filepath.Join(root, "second")
	prog := tree(t, root, []string{second, first}, []string{"-Wl,--enable-new-dtags,-rpath," + first + ":" + second},
		[]string{"-Wl,--enable-new-dtags,-rpath," + second, "-Wl,-rpath-link," + second})
	data, err := os.ReadFile(filepath.Join(first, "libb.so"))
	if err != nil {
		t.Fatal(err)
	}
	data[18] = 183 // EM_AARCH64
	if err := os.WriteFile(filepath.Join(first, "libb.so"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := search(t).Load(prog, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(root, objs), " "); !strings.Contains(got, "second/libb.so") {
		t.Errorf("loads %s, want second/libb.so", got)
	}
}

// TestDlopen checks that libraries named for dlopen come last, with
// their closures, marked.
func TestDlopen(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "lib")
	prog := tree(t, root, []string{lib}, []string{"-Wl,--enable-new-dtags,-rpath,$ORIGIN"},
		[]string{"-Wl,--enable-new-dtags,-rpath," + lib})
	objs, err := search(t).Load("/bin/true", []string{filepath.Join(lib, "liba.so")})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := search(t).Load(prog, []string{"libb.so"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range loaded {
		if o.Dlopened {
			t.Errorf("%s, which the program needs, is marked as dlopened", o.Path)
		}
	}
	var dlopened []string
	for _, o := range objs {
		if o.Dlopened {
			dlopened = append(dlopened, filepath.Base(o.Path))
		}
	}
	if got := strings.Join(dlopened, " "); got != "liba.so libb.so" {
		t.Errorf("dlopened %q, want liba.so libb.so", got)
	}
}

// TestCache checks the cache reader on a cache written here and on the
// machine's.
func TestCache(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(cacheMagic)
	entries := []struct {
		flags uint32
		name  string
		path  string
		hwcap uint64
	}{
		{flagLibc6 | flagX8664, "libx.so.1", "/opt/hwcaps/libx.so.1", hwcapExtBit},
		{flagLibc6 | flagX8664, "libx.so.1", "/opt/libx.so.1", 0},
		{flagLibc6, "liby.so.1", "/opt/32/liby.so.1", 0},
		{flagLibc6 | flagX8664, "libz.so.1", "/opt/libz.so.1", 0},
	}
	strOff := uint32(headerSize + len(entries)*entrySize)
	var strs bytes.Buffer
	hdr := make([]byte, headerSize-len(cacheMagic))
	binary.LittleEndian.PutUint32(hdr, uint32(len(entries)))
	b.Write(hdr)
	for _, e := range entries {
		rec := make([]byte, entrySize)
		binary.LittleEndian.PutUint32(rec, e.flags)
		binary.LittleEndian.PutUint32(rec[4:], strOff+uint32(strs.Len()))
		strs.WriteString(e.name + "\x00")
		binary.LittleEndian.PutUint32(rec[8:], strOff+uint32(strs.Len()))
		strs.WriteString(e.path + "\x00")
		binary.LittleEndian.PutUint64(rec[16:], e.hwcap)
		b.Write(rec)
	}
	b.Write(strs.Bytes())
	c, err := ParseCache(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"libx.so.1": "/opt/libx.so.1", "liby.so.1": "", "libz.so.1": "/opt/libz.so.1"} {
		if got, _ := c.Lookup(name); got != want {
			t.Errorf("Lookup(%s) = %q, want %q", name, got, want)
		}
	}
	if _, err := ParseCache([]byte("ld.so-1.7.0")); !errors.Is(err, ErrCacheFormat) {
		t.Errorf("an old-format cache: %v, want ErrCacheFormat", err)
	}
	sys, err := LoadCache("/etc/ld.so.cache")
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sys.Lookup("libc.so.6"); !ok || !strings.HasSuffix(p, "/libc.so.6") {
		t.Errorf("this machine's cache gives libc.so.6 as %q", p)
	}
}
