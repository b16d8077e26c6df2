package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseZsysnum(t *testing.T) {
	got, err := parseZsysnum("testdata/zsysnum_linux_amd64.go")
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{"read", 0},
		{"write", 1},
		{"_sysctl", 156},
		{"newfstatat", 262},
		{"fstatat", 262},
		{"mseal", 462},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		file string
		want []entry
	}{
		{"unistd_64.h", []entry{{"read", 0}, {"write", 1}, {"rt_sigaction", 13}}},
		{"unistd_x32.h", []entry{
			{"read", 0x40000000},
			{"write", 0x40000001},
			{"rt_sigaction", 0x40000200},
			{"execve", 0x40000208},
		}},
	}
	for _, tt := range tests {
		got, err := parseHeader(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.file, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		file  string
		parse func(string) ([]entry, error)
		want  string
	}{
		{"zsysnum_computed.go", parseZsysnum, "SYS_WRITE is not an integer literal"},
		{"unistd_dup.h", parseHeader, "read is defined as both 0 and 1"},
		{"unistd_garbage.h", parseHeader, `unistd_garbage.h:2: __NR_write: unexpected value "(__NR_read + 1)"`},
		{"unistd_empty.h", parseHeader, "no system calls found"},
		{"missing.h", parseHeader, "no such file"},
	}
	for _, tt := range tests {
		_, err := tt.parse(filepath.Join("testdata", tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got error %v, want one containing %q", tt.file, err, tt.want)
		}
	}
}

func TestMergeX32(t *testing.T) {
	x32 := []entry{{"read", 0x40000000}, {"rt_sigaction", 0x40000200}}
	old64 := []entry{{"read", 0}, {"rt_sigaction", 13}}
	tests := []struct {
		name  string
		x32   []entry
		amd64 []entry
		want  []entry
		err   string
	}{{
		name:  "new calls join with the bit, old 64-bit-only ones stay out",
		x32:   x32,
		amd64: []entry{{"read", 0}, {"rt_sigaction", 13}, {"uretprobe", 335}, {"mseal", 462}},
		want: []entry{
			{"read", 0x40000000},
			{"uretprobe", 0x4000014f},
			{"mseal", 0x400001ce},
			{"rt_sigaction", 0x40000200},
		},
	}, {
		name:  "a new call in the x32 range",
		x32:   x32,
		amd64: []entry{{"read", 0}, {"future", 600}},
		err:   "future (600) is newer than",
	}, {
		name:  "a new call the x32 header already has",
		x32:   append(slices.Clone(x32), entry{"mseal", 0x400001ce}),
		amd64: []entry{{"read", 0}, {"mseal", 462}},
		err:   "mseal (462) is newer than",
	}, {
		name:  "sources disagree on a shared number",
		x32:   []entry{{"write", 0x40000000}},
		amd64: []entry{{"read", 0}},
		err:   `has write at 0, but x/sys's x86_64 table has "read"`,
	}, {
		name:  "an x32 entry without the bit",
		x32:   []entry{{"read", 0}},
		amd64: []entry{{"read", 0}},
		err:   "read (0) lacks the x32 bit",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mergeX32(tt.x32, old64, tt.amd64)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestCommittedTables guards against hand edits and stale tables: the
// generator must reproduce tables.go byte for byte.
func TestCommittedTables(t *testing.T) {
	for _, h := range []string{headerX32, header64} {
		if _, err := os.Stat(h); err != nil {
			t.Skipf("SKIPPING REGENERATION CHECK: %v; install linux-libc-dev to verify tables.go", err)
		}
	}
	out := filepath.Join(t.TempDir(), "tables.go")
	if err := run(out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../tables.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("tables.go is stale or edited by hand (first difference at line %d); run go generate ./syscalls", firstDiff(got, committed))
	}
}

func firstDiff(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
