package ranking

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/syscell/syscell/syscalls"
)

func load(t *testing.T, name string) *Ranking {
	t.Helper()
	r, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Expected levels are read off data/younis2014.yaml and data/default.yaml
// by hand; numbers are the kernel's.
func TestScoreName(t *testing.T) {
	tests := []struct {
		ranking string
		name    string
		want    int
	}{
		{"younis2014", "execve", 3},
		{"younis2014", "mount", 3},
		{"younis2014", "chmod", 3},
		{"younis2014", "open", 3},
		{"younis2014", "openat", 1},
		{"younis2014", "getresgid", 3},
		{"younis2014", "setresgid", 1},
		{"younis2014", "ioctl", 2},
		{"younis2014", "ptrace", 2},
		{"younis2014", "clone3", 1},
		{"younis2014", "read", 1},
		{"younis2014", "nosuchcall", 1},

		{"default", "execve", 3},
		{"default", "mount", 3},
		{"default", "chmod", 3},
		{"default", "open", 3},
		{"default", "openat", 3},
		{"default", "execveat", 3},
		{"default", "getresgid", 1},
		{"default", "setresgid", 3},
		{"default", "ioctl", 2},
		{"default", "mkdirat", 2},
		{"default", "ptrace", 3},
		{"default", "clone3", 3},
		{"default", "io_uring_setup", 3},
		{"default", "memfd_create", 2},
		{"default", "read", 1},
		{"default", "nosuchcall", 1},
	}
	for _, tt := range tests {
		if got := load(t, tt.ranking).ScoreName(tt.name); got != tt.want {
			t.Errorf("%s: ScoreName(%q) = %d, want %d", tt.ranking, tt.name, got, tt.want)
		}
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		ranking string
		arch    syscalls.Arch
		nr      uint32
		want    int
	}{
		{"younis2014", syscalls.X86_64, 90, 3},                 // chmod
		{"younis2014", syscalls.X86_64, 2, 3},                  // open
		{"younis2014", syscalls.X86_64, 257, 1},                // openat
		{"younis2014", syscalls.X86_64, 165, 3},                // mount, listed at both levels
		{"younis2014", syscalls.X86_64, 120, 3},                // getresgid, as published
		{"younis2014", syscalls.X86_64, 16, 2},                 // ioctl
		{"younis2014", syscalls.X86_64, 0, 1},                  // read
		{"younis2014", syscalls.I386, 11, 3},                   // execve
		{"younis2014", syscalls.I386, 15, 3},                   // chmod
		{"younis2014", syscalls.I386, 212, 1},                  // chown32
		{"younis2014", syscalls.X32, syscalls.X32Bit | 520, 3}, // execve
		{"younis2014", syscalls.X86_64, 9999, 1},

		{"default", syscalls.X86_64, 257, 3},                // openat
		{"default", syscalls.X86_64, 120, 1},                // getresgid
		{"default", syscalls.X86_64, 119, 3},                // setresgid
		{"default", syscalls.I386, 212, 3},                  // chown32
		{"default", syscalls.I386, 102, 2},                  // socketcall
		{"default", syscalls.X32, syscalls.X32Bit | 545, 3}, // execveat
		{"default", syscalls.X32, 545, 1},                   // not an x32 number
	}
	for _, tt := range tests {
		if got := load(t, tt.ranking).Score(tt.arch, tt.nr); got != tt.want {
			t.Errorf("%s: Score(%s, %#x) = %d, want %d", tt.ranking, tt.arch, tt.nr, got, tt.want)
		}
	}
}

func TestMountAtBothLevels(t *testing.T) {
	raw := readRaw(t, "data/younis2014.yaml")
	for _, level := range []string{"high-threat", "medium-threat"} {
		if !slices.Contains(raw[level], "165") {
			t.Fatalf("the published table no longer lists mount (165) as %s", level)
		}
	}
	if got := load(t, "younis2014").ScoreName("mount"); got != High {
		t.Errorf("younis2014 scores mount %d, want the higher level %d", got, High)
	}
	src, err := os.ReadFile("testdata/mount-twice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ScoreName("mount"); got != High {
		t.Errorf("mount listed at medium, then high by number: scores %d, want %d", got, High)
	}
	if got := r.ScoreName("mkdir"); got != Medium {
		t.Errorf("mkdir (83) scores %d, want %d", got, Medium)
	}
}

// TestDefaultNamesKnown reads default.yaml without the package's parser, so
// that a lenient parser cannot hide a misspelt name.
func TestDefaultNamesKnown(t *testing.T) {
	raw := readRaw(t, "data/default.yaml")
	if len(raw) != 2 {
		t.Errorf("levels %v, want high-threat and medium-threat", raw)
	}
	for level, names := range raw {
		for _, name := range names {
			if !syscalls.Known(name) {
				t.Errorf("%s: %q is not a known syscall", level, name)
			}
		}
	}
}

// The default only corrects upwards, except where the published level was
// a mistake.
func TestDefaultRaisesOnly(t *testing.T) {
	lowered := []string{"getresgid"}
	published, def := load(t, "younis2014"), load(t, "default")
	var all []string
	for _, a := range syscalls.Arches {
		all = append(all, syscalls.Names(a)...)
	}
	slices.Sort(all)
	for _, name := range slices.Compact(all) {
		was, is := published.ScoreName(name), def.ScoreName(name)
		if is < was && !slices.Contains(lowered, name) {
			t.Errorf("%s: default scores %d, published %d", name, is, was)
		}
		if is >= was && slices.Contains(lowered, name) {
			t.Errorf("%s: default scores %d, published %d; want it lowered", name, is, was)
		}
	}
}

func TestPublishedUnchanged(t *testing.T) {
	const want = "b1fc12f71485fd0e14af554f34e323f960bfa49ea06e6328ddd8baaef9261c3b"
	src, err := os.ReadFile("data/younis2014.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("data/younis2014.yaml has SHA-256 %s, want the published %s", got, want)
	}
}

func TestNames(t *testing.T) {
	if got, want := Names(), []string{"default", "younis2014"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, name := range []string{"", "nope", "README", "../data/default", "default.yaml"} {
		_, err := Load(name)
		if err == nil || !strings.Contains(err.Error(), "unknown ranking") {
			t.Errorf("Load(%q): got error %v, want unknown ranking", name, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"unknown-level.yaml", "field low-threat not found"},
		{"unknown-name.yaml", `medium-threat: line 4: unknown syscall "nosuchcall"`},
		{"unknown-number.yaml", "high-threat: line 4: no x86_64 syscall has number 9999"},
		{"empty-entry.yaml", "high-threat: line 4: want a syscall name or x86_64 number, got !!null"},
		{"negative-number.yaml", `high-threat: line 3: syscall number "-59": invalid syntax`},
		{"nested.yaml", "medium-threat: line 3: want a syscall name or x86_64 number, got !!seq"},
		{"nothing-ranked.yaml", "no system calls ranked"},
	}
	for _, tt := range tests {
		src, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parse(src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.file, err, tt.want)
		}
	}
}

// readRaw decodes a ranking table as plain YAML: level to entries.
func readRaw(t *testing.T, file string) map[string][]string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Syscalls map[string][]string
	}
	if err := yaml.Unmarshal(src, &raw); err != nil {
		t.Fatal(err)
	}
	return raw.Syscalls
}
