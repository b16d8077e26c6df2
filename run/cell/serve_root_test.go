package cell

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/policy"
)

// makeRoot builds a program's root directory: files, and symbolic links
// that are absolute (resolved under the root, never on the host).
func makeRoot(t *testing.T, files map[string]string, links map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, from := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(from)
		if filepath.IsAbs(from) {
			var err error
			if data, err = os.ReadFile(from); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, to := range links {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, path); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestRootedIdentities resolves compartments' paths under a program's
// root: an absolute symbolic link leads to the root's file, a path with
// nothing under the root matches nothing, and a name that is a path is
// one.
func TestRootedIdentities(t *testing.T) {
	root := makeRoot(t, map[string]string{"opt/lib/libx.so": "x"}, map[string]string{"usr/lib/liby.so": "/opt/lib/libx.so"})
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(root, "opt/lib/libx.so"), &st); err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Compartments: []policy.Compartment{
		{Name: "y", Path: "/usr/lib/liby.so"},
		{Name: "/opt/lib/libx.so"},
		{Name: "gone", Path: "/opt/lib/libgone.so"},
		{Name: "libz.so"},
	}}
	ids, err := rootedIdentities(p, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []identity{
		{file: true, dev: st.Dev, ino: st.Ino},
		{file: true, dev: st.Dev, ino: st.Ino},
		{nothing: true},
		{name: "libz.so"},
	}
	for i, id := range ids.ids {
		if id != want[i] {
			t.Errorf("compartment %q: %+v, want %+v", p.Compartments[i].Name, id, want[i])
		}
	}
	if ids.names[0] != "y" || ids.names[1] != "/opt/lib/libx.so" {
		t.Errorf("names changed: %q", ids.names)
	}
	if p.Compartments[0].Path != "/usr/lib/liby.so" {
		t.Errorf("the policy was changed: %+v", p.Compartments[0])
	}
}

// TestCheckProgram finds programs under a root as the program's own root
// would find them, and refuses those the loader would run without the
// audit library.
func TestCheckProgram(t *testing.T) {
	root := makeRoot(t, map[string]string{
		"usr/bin/true":     "/usr/bin/true",
		"usr/bin/ldconfig": "/usr/sbin/ldconfig",
		"usr/bin/script":   "#!/usr/bin/true\n",
		"usr/bin/static":   "#!/usr/bin/ldconfig\n",
		"usr/bin/suid":     "/usr/bin/true",
	}, map[string]string{"bin/abs": "/usr/bin/true"})
	if err := os.Chmod(filepath.Join(root, "usr/bin/suid"), os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path       string
		privileges bool
		want       error
	}{
		{"/usr/bin/true", true, nil},
		{"/bin/abs", true, nil},
		{"/usr/bin/script", true, nil},
		{"/usr/bin/ldconfig", true, ErrNotAuditable},
		{"/usr/bin/static", true, ErrNotAuditable},
		{"/usr/bin/suid", true, ErrNotAuditable},
		{"/usr/bin/suid", false, nil},
		{"/usr/bin/missing", true, fs.ErrNotExist},
		{"/../../usr/bin/true", true, nil},
	} {
		err := CheckProgram(root, tc.path, "", tc.privileges)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckProgram(%s, %v) = %v, want %v", tc.path, tc.privileges, err, tc.want)
		}
	}
}

// TestCheckGlibc checks that a root's glibc can load the audit library:
// this machine's can; a root without glibc's loader cannot; and a
// library that needs libc's symbol versions (the audit library needs
// none, but would, linked with libc) cannot be loaded where libc lacks
// one, while the audit library can.
func TestCheckGlibc(t *testing.T) {
	dir := t.TempDir()
	library := filepath.Join(dir, LibraryName)
	if diag, err := BuildLibrary("../../audit", library, "gcc"); err != nil || diag != "" {
		t.Skipf("SKIPPED: cannot build the audit library: %v\n%s", err, diag)
	}
	if err := checkGlibc("/", library); err != nil {
		t.Errorf("this machine's glibc: %v", err)
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	musl := makeRoot(t, map[string]string{"lib/x86_64-linux-gnu/libc.so.6": libc}, nil)
	if err := checkGlibc(musl, library); !errors.Is(err, ErrNotAuditable) || !strings.Contains(err.Error(), "no glibc loader") {
		t.Errorf("a root without glibc's loader: %v", err)
	}
	// A libc of another library's versions: the loader's own.
	old := makeRoot(t, map[string]string{"lib64/ld-linux-x86-64.so.2": glibcLoader, "lib/x86_64-linux-gnu/libc.so.6": glibcLoader}, nil)
	if err := checkGlibc(old, library); err != nil {
		t.Errorf("the audit library, which needs no libc, under a libc without its versions: %v", err)
	}
	// stat is GLIBC_2.33's, which the loader does not define.
	versioned := filepath.Join(dir, "libversioned.so")
	src := filepath.Join(dir, "versioned.c")
	if err := os.WriteFile(src, []byte("#include <sys/stat.h>\nint exists(const char *p) { struct stat st; return stat(p, &st) == 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", versioned, src).CombinedOutput(); err != nil {
		t.Fatalf("build a library linked with libc: %v\n%s", err, out)
	}
	if err := checkGlibc(old, versioned); !errors.Is(err, ErrNotAuditable) || !strings.Contains(err.Error(), "lacks GLIBC_2.") {
		t.Errorf("a libc without the versions the library needs: %v", err)
	}
}
