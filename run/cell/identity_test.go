package cell

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/compartment"
	"github.com/syscell/syscell/policy"
)

// TestCompartmentOf checks the rule that maps an object to its
// compartment, which audit/object.c implements too (TestCompartments
// checks that the two agree on real objects).
func TestCompartmentOf(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libfoo.so.1.2")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(lib, &st); err != nil {
		t.Fatal(err)
	}
	ids, err := newIdentities(&policy.Policy{Compartments: []policy.Compartment{
		{Name: "[runtime]"},
		{Name: "by-path-and-build-id", Path: lib, BuildID: "ABCD"},
		{Name: "by-path", Path: lib},
		{Name: "by-build-id", BuildID: "beef"},
		{Name: "libbar.so.1"},
		{Name: filepath.Join(dir, "missing.so"), BuildID: "cafe"},
		{Name: "libfoo.so.1.2"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	file := func(path, soname, buildID string, dev, ino uint64) *attribute.Object {
		return &attribute.Object{ID: attribute.ID{Kind: attribute.File, Dev: dev, Ino: ino, BuildID: buildID}, Path: path, Soname: soname}
	}
	for _, tc := range []struct {
		name string
		obj  *attribute.Object
		want string
	}{
		{"the file at the path, the build-id", file(lib, "", "abcd", st.Dev, st.Ino), "by-path-and-build-id"},
		{"the file at the path, another build", file("/elsewhere/libfoo.so", "", "0123", st.Dev, st.Ino), "by-path"},
		{"the build-id anywhere", file("/opt/libx.so", "", "beef", 1, 2), "by-build-id"},
		{"a missing path's build-id, another file name", file("/opt/libx.so", "", "cafe", 1, 2), ""},
		{"a missing path's build-id and file name, made after start", file(filepath.Join(dir, "missing.so"), "", "cafe", 3, 4), filepath.Join(dir, "missing.so")},
		{"a missing path's file name, another build", file(filepath.Join(dir, "missing.so"), "", "0123", 3, 4), ""},
		{"another file at the path's name", file(lib, "", "", st.Dev, st.Ino+1), "libfoo.so.1.2"},
		{"named like the runtime's compartment", file("/x/[runtime]", "", "", 1, 2), ""},
		{"soname", file("/lib/libbar.so.1.0.7", "libbar.so.1", "", 1, 2), "libbar.so.1"},
		{"file name", file("/opt/libbar.so.1", "", "", 1, 2), "libbar.so.1"},
		{"no match", file("/opt/libbaz.so", "libbaz.so", "", 1, 2), ""},
		{"runtime", &attribute.Object{ID: attribute.ID{Kind: attribute.File}, Path: "/lib/libbar.so.1", Runtime: true}, ""},
		{"anonymous memory", attribute.AnonExecObject(), ""},
	} {
		got, ok := ids.compartmentOf(tc.obj)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestIdentityRejectsSeparators(t *testing.T) {
	for _, name := range []string{"lib;x.so", "lib\nx.so", "lib x.so"} {
		if _, err := newIdentities(&policy.Policy{Compartments: []policy.Compartment{{Name: name}}}); err == nil {
			t.Errorf("compartment %q: no error", name)
		}
	}
}

// TestAsLoaded: code is an object's only in mappings the loader made and
// the audit library sealed, and never written, but for the runtime's,
// whose wrappers the audit library patches before sealing them.
func TestAsLoaded(t *testing.T) {
	lib := &attribute.Object{Path: "/usr/lib/libgood.so"}
	libc := &attribute.Object{Path: "/usr/lib/libc.so.6", Runtime: true}
	for _, tc := range []struct {
		name       string
		obj        *attribute.Object
		v          vma
		ok, sealed bool
		want       bool
	}{
		{"sealed, unwritten", lib, vma{sealed: true}, true, true, true},
		{"sealed, written", lib, vma{sealed: true, written: true}, true, true, false},
		{"not sealed", lib, vma{}, true, true, false},
		{"not sealed, no mseal", lib, vma{}, true, false, true},
		{"not in smaps", lib, vma{sealed: true}, false, true, false},
		{"runtime, patched and sealed", libc, vma{sealed: true, written: true}, true, true, true},
		{"runtime, not sealed", libc, vma{written: true}, true, true, false},
	} {
		if got := asLoaded(tc.obj, tc.v, tc.ok, tc.sealed); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestParseSmaps reads what the supervisor needs of each mapping from
// /proc/PID/smaps text (testdata/smaps.txt, from this machine's kernel):
// a sealed mapping never written, one written, one neither sealed nor
// written, and the stack.
func TestParseSmaps(t *testing.T) {
	b, err := os.ReadFile("testdata/smaps.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]vma{
		0x7f1234560000: {sealed: true},
		0x7f1234600000: {sealed: true, written: true},
		0x7f1234700000: {},
		0x7ffe12340000: {written: true},
	}
	if got := parseSmaps(b); !maps.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestSealedCodeRecheck reads a process's mappings again as sealedCode
// lets it, from the pages of mappings an earlier read found sealed: code
// never written stays its file's, a page written through /proc/PID/mem
// makes its mapping anonymous executable memory, and a mapping the
// earlier read did not know, or another image, sends the read to smaps.
func TestSealedCodeRecheck(t *testing.T) {
	child := sleeper(t)
	pid := child.Process.Pid
	objs := attribute.NewObjects(attribute.DefaultRuntime())
	defer objs.Close()
	space, err := attribute.ReadSpace(pid, objs)
	if err != nil {
		t.Fatal(err)
	}
	image, err := auxv(pid)
	if err != nil {
		t.Fatal(err)
	}
	known := &sealedCode{image: image, maps: map[codeKey]bool{}}
	var sleep attribute.Mapping
	for _, m := range space.Mappings() {
		if m.Object.Kind == attribute.File {
			known.maps[keyOf(m)] = true
			if !m.Object.Runtime {
				sleep = m
			}
		}
	}
	if sleep.Object == nil {
		t.Fatal("no mapping of sleep's own code")
	}
	if !known.holds(space, image, 0) || known.holds(space, append([]byte{1}, image...), 0) || known.holds(space, image, 1) {
		t.Fatal("holds: wrong about the image")
	}
	fewer := &sealedCode{image: image, maps: map[codeKey]bool{keyOf(sleep): true}}
	if fewer.holds(space, image, 0) {
		t.Fatal("holds a space with mappings it does not know")
	}
	// The sleeper is no program of syscell's: smaps shows its code
	// unsealed, and only what stands for an earlier read makes it its
	// file's.
	reported, partial := map[compartment.Range]bool{}, map[compartment.Range]bool{}
	for _, m := range space.Mappings() {
		if m.Object.Kind == attribute.File {
			reported[compartment.Range{Start: m.Start, End: m.End}] = true
			if m != sleep {
				partial[compartment.Range{Start: m.Start, End: m.End}] = true
			}
		}
	}
	owners := func(known *sealedCode, reported ...map[compartment.Range]bool) (string, *sealedCode) {
		t.Helper()
		var r map[compartment.Range]bool
		if len(reported) > 0 {
			r = reported[0]
		}
		out, code, err := loadedCode(pid, space, objs, true, known, 0, r)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := out.Lookup(sleep.Start)
		if !ok {
			t.Fatal("sleep's code is gone")
		}
		return m.Object.Path, code
	}
	if path, code := owners(known); path != sleep.Object.Path || !code.maps[keyOf(sleep)] {
		t.Fatalf("unwritten: %s, known again %v", path, code.maps[keyOf(sleep)])
	}
	if path, code := owners(nil, reported); path != sleep.Object.Path || !code.maps[keyOf(sleep)] {
		t.Fatalf("unwritten, reported sealed: %s, known again %v", path, code.maps[keyOf(sleep)])
	}
	if path, _ := owners(nil); path != "[anon-exec]" {
		t.Fatalf("unsealed, nothing reported: %s, want [anon-exec] (smaps)", path)
	}
	if path, _ := owners(nil, partial); path != "[anon-exec]" {
		t.Fatalf("unsealed, reported without it: %s, want [anon-exec] (smaps)", path)
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	b := make([]byte, 1)
	if _, err := mem.ReadAt(b, int64(sleep.Start)); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.WriteAt(b, int64(sleep.Start)); err != nil {
		t.Skipf("SKIPPED: this kernel refuses writes of code through /proc/PID/mem: %v", err)
	}
	if path, code := owners(known); path != "[anon-exec]" || code.maps[keyOf(sleep)] {
		t.Fatalf("written: %s, known again %v", path, code.maps[keyOf(sleep)])
	}
	if path, code := owners(nil, reported); path != "[anon-exec]" || code.maps[keyOf(sleep)] {
		t.Fatalf("written, reported sealed: %s, known again %v", path, code.maps[keyOf(sleep)])
	}
}
