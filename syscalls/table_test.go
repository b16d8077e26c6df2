package syscalls

import (
	"slices"
	"strings"
	"testing"
)

// Numbers from the kernel's syscall_64.tbl and syscall_32.tbl, not from the
// generated tables.
var spotChecks = []struct {
	arch Arch
	name string
	nr   uint32
}{
	{X86_64, "read", 0},
	{X86_64, "write", 1},
	{X86_64, "execve", 59},
	{X86_64, "openat", 257},
	{X86_64, "newfstatat", 262},
	{X86_64, "_sysctl", 156},
	{X86_64, "uretprobe", 335},
	{X86_64, "mseal", 462},
	{X86_64, "setxattrat", 463},
	{X86_64, "removexattrat", 466},
	{I386, "exit", 1},
	{I386, "execve", 11},
	{I386, "socketcall", 102},
	{I386, "_llseek", 140},
	{I386, "chown32", 212},
	{I386, "mseal", 462},
	{X32, "read", 0x40000000},
	{X32, "openat", 0x40000000 | 257},
	{X32, "rt_sigaction", 0x40000000 | 512},
	{X32, "execve", 0x40000000 | 520},
	{X32, "pwritev2", 0x40000000 | 547},
	{X32, "uretprobe", 0x40000000 | 335},
	{X32, "mseal", 0x40000000 | 462},
	{X32, "removexattrat", 0x40000000 | 466},
}

func TestSpotChecks(t *testing.T) {
	for _, tt := range spotChecks {
		nr, ok := Lookup(tt.arch, tt.name)
		if !ok || nr != tt.nr {
			t.Errorf("Lookup(%s, %q) = %#x, %t; want %#x", tt.arch, tt.name, nr, ok, tt.nr)
		}
		name, ok := Name(tt.arch, tt.nr)
		if !ok || name != tt.name {
			t.Errorf("Name(%s, %#x) = %q, %t; want %q", tt.arch, tt.nr, name, ok, tt.name)
		}
	}
}

// Calls an ABI lacks, though another has them.
func TestAbsent(t *testing.T) {
	tests := []struct {
		arch Arch
		name string
	}{
		{X86_64, "socketcall"},
		{X86_64, "chown32"},
		{I386, "newfstatat"},
		{I386, "uretprobe"},
		{X32, "_sysctl"},
		{X32, "socketcall"},
	}
	for _, tt := range tests {
		if nr, ok := Lookup(tt.arch, tt.name); ok {
			t.Errorf("Lookup(%s, %q) = %#x, want absent", tt.arch, tt.name, nr)
		}
	}
	// x32 reaches rt_sigaction through 512; the x86_64 number is not x32's.
	if name, ok := Name(X32, X32Bit|13); ok {
		t.Errorf("Name(x32, X32Bit|13) = %q, want absent", name)
	}
	if name, ok := Name(X32, 0); ok {
		t.Errorf("Name(x32, 0) = %q, want absent: x32 numbers carry the bit", name)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, a := range Arches {
		names, nrs := Names(a), Numbers(a)
		if len(names) < 300 || len(names) != len(nrs) {
			t.Fatalf("%s: %d names, %d numbers", a, len(names), len(nrs))
		}
		for i, name := range names {
			if i > 0 && nrs[i] <= nrs[i-1] {
				t.Errorf("%s: numbers not ascending at %#x", a, nrs[i])
			}
			if nr, ok := Lookup(a, name); !ok || nr != nrs[i] {
				t.Errorf("%s: Lookup(%q) = %#x, %t; want %#x", a, name, nr, ok, nrs[i])
			}
			if got, ok := Name(a, nrs[i]); !ok || got != name {
				t.Errorf("%s: Name(%#x) = %q, %t; want %q", a, nrs[i], got, ok, name)
			}
			if got := nrs[i] &^ X32Bit; got >= MaxPlausible {
				t.Errorf("%s: %s = %#x is implausible", a, name, nrs[i])
			}
			if x32 := nrs[i]&X32Bit != 0; x32 != (a == X32) {
				t.Errorf("%s: %s = %#x, x32 bit %t", a, name, nrs[i], x32)
			}
		}
		if got, want := Max(a), slices.Max(nrs); got != want {
			t.Errorf("Max(%s) = %#x, want %#x", a, got, want)
		}
	}
}

func TestUnknownArch(t *testing.T) {
	a := Arch(200)
	if _, ok := Lookup(a, "read"); ok {
		t.Error("Lookup succeeded on an unknown arch")
	}
	if len(Names(a)) != 0 || len(Numbers(a)) != 0 || Max(a) != 0 {
		t.Error("an unknown arch has system calls")
	}
}

func TestResultsAreCopies(t *testing.T) {
	Names(X86_64)[0] = "clobbered"
	Numbers(X86_64)[0] = 99
	if Names(X86_64)[0] != "read" || Numbers(X86_64)[0] != 0 {
		t.Error("callers can modify the tables")
	}
}

// TestAliases checks a number two names share: both resolve, the first
// is its name, and lists hold it once.
func TestAliases(t *testing.T) {
	byNr := []entry{{"read", 0}, {"newfstatat", 262}, {"fstatat", 262}}
	if name, _ := nameOf(byNr, 262); name != "newfstatat" {
		t.Errorf("canonical name of 262 = %q, want the first listed", name)
	}
	if nr, ok := lookup([]entry{{"fstatat", 262}, {"newfstatat", 262}, {"read", 0}}, "fstatat"); !ok || nr != 262 {
		t.Errorf("lookup(fstatat) = %d, %t: the alias does not resolve", nr, ok)
	}
	if got := slices.Collect(canonical(byNr)); !slices.Equal(got, byNr[:2]) {
		t.Errorf("canonical entries %v, want each number once", got)
	}
}

// TestByName checks that each table sorted by name, which Lookup
// searches, holds exactly the entries of the table by number.
func TestByName(t *testing.T) {
	for _, a := range Arches {
		byNr := slices.SortedFunc(slices.Values(tables[a]), func(x, y entry) int { return strings.Compare(x.name, y.name) })
		if !slices.Equal(byNr, byName[a]) {
			t.Errorf("%s: the table by name differs from the table by number (run go generate)", a)
		}
		for i := 1; i < len(byName[a]); i++ {
			if byName[a][i-1].name >= byName[a][i].name {
				t.Errorf("%s: %q listed after %q", a, byName[a][i].name, byName[a][i-1].name)
			}
		}
	}
}

func TestKnown(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"read", true},
		{"socketcall", true},
		{"newfstatat", true},
		{"uretprobe", true},
		{"", false},
		{"READ", false},
		{"sys_read", false},
		{"nosuchcall", false},
	}
	for _, tt := range tests {
		if got := Known(tt.name); got != tt.want {
			t.Errorf("Known(%q) = %t, want %t", tt.name, got, tt.want)
		}
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		arch Arch
		in   string
		want uint32
		err  string
	}{
		{arch: X86_64, in: "execve", want: 59},
		{arch: X86_64, in: "59", want: 59},
		{arch: X86_64, in: "0x3b", want: 59},
		{arch: X86_64, in: "0X3B", want: 59},
		{arch: X86_64, in: "010", want: 10},
		{arch: X86_64, in: "1023", want: 1023},
		{arch: I386, in: "socketcall", want: 102},
		{arch: X32, in: "execve", want: X32Bit | 520},
		{arch: X32, in: "520", want: X32Bit | 520},
		{arch: X32, in: "0x40000208", want: X32Bit | 520},
		{arch: X32, in: "1073742344", want: X32Bit | 520},
		{arch: X86_64, in: "socketcall", err: `unknown syscall "socketcall" on x86_64 (it exists on x86)`},
		{arch: X86_64, in: "nosuchcall", err: `unknown syscall "nosuchcall" on x86_64`},
		{arch: I386, in: "newfstatat", err: `unknown syscall "newfstatat" on x86 (it exists on x86_64, x32)`},
		{arch: X86_64, in: "", err: "empty syscall name"},
		{arch: X86_64, in: "1024", err: "implausible syscall number 0x400 on x86_64"},
		{arch: X86_64, in: "0x40000000", err: "carries the x32 bit"},
		{arch: X32, in: "0x40000400", err: "implausible syscall number 0x40000400 on x32"},
		{arch: X32, in: "4096", err: "implausible"},
		{arch: X86_64, in: "99999999999", err: `syscall number "99999999999" on x86_64: value out of range`},
		{arch: X86_64, in: "0x", err: "invalid syntax"},
		{arch: X86_64, in: "5x", err: "invalid syntax"},
		{arch: X86_64, in: "-1", err: `unknown syscall "-1"`},
	}
	for _, tt := range tests {
		got, err := Resolve(tt.arch, tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%s, %q) = %#x, %v; want error containing %q", tt.arch, tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%s, %q) = %#x, %v; want %#x", tt.arch, tt.in, got, err, tt.want)
		}
	}
}
