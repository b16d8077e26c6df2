package attribute

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/unwind"
)

// note builds one ELF note.
func note(name string, typ uint32, desc []byte, align int) []byte {
	pad := func(b []byte) []byte {
		for len(b)%align != 0 {
			b = append(b, 0)
		}
		return b
	}
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)+1))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, pad(append([]byte(name), 0))...)
	return append(b, pad(desc)...)
}

func TestNoteBuildID(t *testing.T) {
	id := []byte{0x3f, 0x2a, 0x00, 0xff, 0x10}
	for _, c := range []struct {
		name  string
		notes []byte
		align uint64
		want  string
	}{
		{"alone", note("GNU", 3, id, 4), 4, "3f2a00ff10"},
		{"after another note", append(note("GNU", 5, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 4), note("GNU", 3, id, 4)...), 4, "3f2a00ff10"},
		{"8-aligned", append(note("GNU", 5, []byte{1, 2, 3}, 8), note("GNU", 3, id, 8)...), 8, "3f2a00ff10"},
		{"other owner", note("Go", 3, id, 4), 4, ""},
		{"truncated", note("GNU", 3, id, 4)[:18], 4, ""},
		{"none", nil, 4, ""},
	} {
		if got := noteBuildID(c.notes, c.align); got != c.want {
			t.Errorf("%s: build-id %q, want %q", c.name, got, c.want)
		}
	}
}

// TestFileBuildID reads libc's build-id and compares it with what
// readelf says.
func TestFileBuildID(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Skipf("SKIPPED: readelf is the oracle and is missing: %v", err)
	}
	out, err := exec.Command(readelf, "-n", libc).Output()
	if err != nil {
		t.Skipf("SKIPPED: %s: %v", libc, err)
	}
	_, after, ok := strings.Cut(string(out), "Build ID: ")
	want, _, _ := strings.Cut(after, "\n")
	got, err := FileBuildID(libc)
	if err != nil || !ok || got != want {
		t.Errorf("FileBuildID(%s) = %q, %v; readelf says %q", libc, got, err, want)
	}
	if _, err := FileBuildID("/nonexistent"); err == nil {
		t.Error("FileBuildID of a missing file: no error")
	}
}

// TestFileIdentity checks that an object is read only from the file whose
// device and inode were mapped, and that the second path is tried.
func TestFileIdentity(t *testing.T) {
	dir := t.TempDir()
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	var st unix.Stat_t
	if err := unix.Stat(libc, &st); err != nil {
		t.Skipf("SKIPPED: no %s: %v", libc, err)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not the mapped file"), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := NewObjects(DefaultRuntime())
	defer objs.Close()
	if obj := objs.File(st.Dev, st.Ino+1, libc); !errors.Is(obj.Err, ErrChanged) {
		t.Errorf("a file at the path with another inode: %v, want ErrChanged", obj.Err)
	}
	obj := objs.File(st.Dev, st.Ino, other, libc)
	if obj.Err != nil || obj.Soname != "libc.so.6" || !obj.Runtime || len(obj.BuildID) != 40 || obj.Path != other {
		t.Errorf("libc through its second path: %+v", obj)
	}
	if again := objs.File(st.Dev, st.Ino, libc); again != obj {
		t.Error("the same file loaded twice")
	}
	if _, err := objs.Table(obj); err != nil {
		t.Error(err)
	}
}

// TestRuleWithoutCFI applies the rule where no unwind is needed or
// possible: code in anonymous memory is its own compartment, as is an
// unreadable object outside the runtime (unreadable.go); an unmapped
// address and an unreadable runtime object, which the unwind would have
// to go through, are failures, never guesses.
func TestRuleWithoutCFI(t *testing.T) {
	unreadable := &Object{ID: ID{Kind: File}, Path: "/gone/libx.so", Err: errors.New("cannot read")}
	unreadableLibc := &Object{ID: ID{Kind: File}, Path: "/gone/libc.so.6", Err: errors.New("cannot read"), Runtime: true}
	s := NewSpace(NewObjects(DefaultRuntime()))
	s.Map(Mapping{Start: 0x10000, End: 0x11000, Object: AnonExecObject()})
	s.Map(Mapping{Start: 0x20000, End: 0x21000, Object: unreadable})
	s.Map(Mapping{Start: 0x40000, End: 0x41000, Object: unreadableLibc})
	mem := &unwind.Stack{Addr: 0x7000, Data: make([]byte, 64)}
	for _, c := range []struct {
		ip     uint64
		owner  *Object
		failed *Object
		err    error
	}{
		{ip: 0x10008, owner: AnonExecObject()},
		{ip: 0x20008, owner: unreadable},
		{ip: 0x40008, failed: unreadableLibc},
		{ip: 0x30008, err: ErrUnmapped},
	} {
		regs := unwind.Regs{unwind.RA: c.ip, unwind.RSP: 0x7000}
		res, err := Attribute(s, 0, &regs, mem)
		var f *Failure
		switch {
		case c.owner != nil && (err != nil || res.Object != c.owner):
			t.Errorf("ip %#x: %v, %v; want %s", c.ip, res, err, c.owner)
		case c.owner == nil && !errors.As(err, &f):
			t.Errorf("ip %#x: %v, %v; want a failure", c.ip, res, err)
		case c.owner == nil && (f.Object != c.failed || c.err != nil && !errors.Is(err, c.err)):
			t.Errorf("ip %#x: failure %v in %v, want in %v (%v)", c.ip, err, f.Object, c.failed, c.err)
		}
	}
}

// TestUnreadableRuntime checks that an object that cannot be read is the
// runtime's when its file is named as a runtime library is.
func TestUnreadableRuntime(t *testing.T) {
	objs := NewObjects(DefaultRuntime())
	for path, runtime := range map[string]bool{"/gone/libc.so.6": true, "/gone/ld-linux-x86-64.so.2": true, "/gone/libssl.so.3": false, "/gone/prog": false} {
		obj := objs.File(1, uint64(len(path)), path)
		if obj.Err == nil || obj.Runtime != runtime {
			t.Errorf("%s: error %v, runtime %v; want an error, runtime %v", path, obj.Err, obj.Runtime, runtime)
		}
	}
}
