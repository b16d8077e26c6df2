package attribute

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseMaps reads testdata/maps.txt: paths with spaces, deleted files,
// anonymous and special mappings, device numbers in hex.
func TestParseMaps(t *testing.T) {
	f, err := os.Open("testdata/maps.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseMaps(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []MapsEntry{
		{Start: 0x55d0c3a00000, End: 0x55d0c3a01000, Perms: "r--p", Dev: unix.Mkdev(0xfe, 0), Ino: 10021882, Path: "/usr/bin/prog"},
		{Start: 0x55d0c3a01000, End: 0x55d0c3a02000, Offset: 0x1000, Perms: "r-xp", Dev: unix.Mkdev(0xfe, 0), Ino: 10021882, Path: "/usr/bin/prog"},
		{Start: 0x55d0c4e1c000, End: 0x55d0c4e3d000, Perms: "rw-p", Path: "[heap]"},
		{Start: 0x7f3b5a000000, End: 0x7f3b5a021000, Perms: "rwxp"},
		{Start: 0x7f3b5a200000, End: 0x7f3b5a201000, Offset: 0x2000, Perms: "r-xp", Dev: unix.Mkdev(8, 0x11), Ino: 42, Path: "/opt/my lib/libspace.so (deleted)"},
		{Start: 0x7f3b5a3d4000, End: 0x7f3b5a529000, Offset: 0x26000, Perms: "r-xp", Dev: unix.Mkdev(0xfe, 0), Ino: 325840, Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{Start: 0x7ffd8f2c5000, End: 0x7ffd8f2c9000, Perms: "r--p", Path: "[vvar]"},
		{Start: 0x7ffd8f2c9000, End: 0x7ffd8f2cb000, Perms: "r-xp", Path: "[vdso]"},
		{Start: 0x7ffd8f2a4000, End: 0x7ffd8f2c5000, Perms: "rw-p", Path: "[stack]"},
		{Start: 0xffffffffff600000, End: 0xffffffffff601000, Perms: "--xp", Path: "[vsyscall]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseMapsErrors(t *testing.T) {
	for _, line := range []string{
		"55d0c3a00000 r--p 00000000 fe:00 1",
		"55d0c3a00000-zz r--p 00000000 fe:00 1",
		"55d0c3a00000-55d0c3a01000 r--p 00000000 fe00 1",
		"55d0c3a00000-55d0c3a01000 r--p",
	} {
		if _, err := ParseMaps(strings.NewReader(line)); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
}

// TestSpaceMapUnmap checks that mappings replace what they overlap and
// that unmapping splits, keeping file offsets right.
func TestSpaceMapUnmap(t *testing.T) {
	a, b := &Object{Path: "a"}, &Object{Path: "b"}
	for _, c := range []struct {
		name string
		do   func(s *Space)
		want string
	}{
		{"disjoint", func(s *Space) {
			s.Map(Mapping{Start: 0x3000, End: 0x4000, Object: b})
			s.Map(Mapping{Start: 0x1000, End: 0x2000, Object: a})
		}, "a 1000-2000+0 b 3000-4000+0"},
		{"split", func(s *Space) {
			s.Map(Mapping{Start: 0x1000, End: 0x5000, Offset: 0x10000, Object: a})
			s.Unmap(0x2000, 0x3000)
		}, "a 1000-2000+10000 a 3000-5000+12000"},
		{"replace", func(s *Space) {
			s.Map(Mapping{Start: 0x1000, End: 0x5000, Object: a})
			s.Map(Mapping{Start: 0x2000, End: 0x3000, Object: b})
		}, "a 1000-2000+0 b 2000-3000+0 a 3000-5000+2000"},
		{"unmap all", func(s *Space) {
			s.Map(Mapping{Start: 0x1000, End: 0x2000, Object: a})
			s.Map(Mapping{Start: 0x3000, End: 0x4000, Object: b})
			s.Unmap(0, 0x10000)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSpace(nil)
			c.do(s)
			var parts []string
			for _, m := range s.Mappings() {
				parts = append(parts, m.Object.Path+" "+hexa(m.Start)+"-"+hexa(m.End)+"+"+hexa(m.Offset))
			}
			if got := strings.Join(parts, " "); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			clone := s.Clone()
			clone.Unmap(0, ^uint64(0))
			if len(s.Mappings()) != len(strings.Fields(c.want))/2 {
				t.Error("unmapping a clone changed the original")
			}
		})
	}
}

func hexa(v uint64) string { return strconv.FormatUint(v, 16) }
