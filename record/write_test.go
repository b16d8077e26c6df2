package record

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/syscell/syscell/syscalls"
)

// update regenerates the golden files: go test ./record -run Golden -update.
var update = flag.Bool("update", false, "rewrite testdata/golden_*")

// sample is a recording with one of everything a policy shows.
func sample() *Recording {
	return &Recording{
		Compartments: []*Compartment{
			{Name: "/usr/lib/libfoo.so.1", Path: "/usr/lib/libfoo.so.1", BuildID: "3f2a00ff", Calls: map[string]uint64{"getpid": 3, "write": 1}},
			{Name: "/usr/bin/prog", Path: "/usr/bin/prog", BuildID: "77aa", Calls: map[string]uint64{"getegid": 1, "execve": 2}},
			{Name: RuntimeName, Calls: map[string]uint64{"exit_group": 1, "openat": 25}},
			{Name: AnonExecName, Calls: map[string]uint64{"getpid": 1}},
		},
		Arches:   []syscalls.Arch{syscalls.X86_64},
		Failures: []Failure{{Where: "/usr/lib/libbar.so", Reason: "code without CFI", Calls: map[string]uint64{"mkdir": 2}}},
		Allowed:  []string{"uname"},
		Unknown:  map[uint32]uint64{},
	}
}

// TestGolden writes the sample as TOML and syso JSON, and compares with
// testdata/golden_*.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		file  string
		write func(*Recording, *bytes.Buffer) error
	}{
		{"golden_sample.toml", func(r *Recording, b *bytes.Buffer) error { return r.WriteTOML(b) }},
		{"golden_sample.json", func(r *Recording, b *bytes.Buffer) error { return r.WriteSyso(b) }},
	} {
		var got bytes.Buffer
		if err := c.write(sample(), &got); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s differs (go test -update rewrites it):\n%s", c.file, got.Bytes())
		}
	}
}

// TestRoundTrip reads back what was written: the compartments and their
// counts survive TOML; syso JSON keeps the counts but has no build-ids.
func TestRoundTrip(t *testing.T) {
	want := sample()
	toml, err := Load("testdata/golden_sample.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got, wantC := calls(toml), calls(want); !reflect.DeepEqual(got, wantC) {
		t.Errorf("TOML compartments:\n%v\nwant\n%v", got, wantC)
	}
	// The union's calls that belong to no compartment (the unattributed
	// mkdir, uname, and restart_syscall, which every recording allows)
	// come back as allowed.
	if !reflect.DeepEqual(toml.Allowed, []string{"mkdir", "restart_syscall", "uname"}) {
		t.Errorf("allowed outside compartments: %v", toml.Allowed)
	}
	syso, err := Load("testdata/golden_sample.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range syso.Compartments {
		c.BuildID = want.Compartments[indexOf(want, c.Name)].BuildID
	}
	if got, wantC := calls(syso), calls(want); !reflect.DeepEqual(got, wantC) {
		t.Errorf("syso compartments:\n%v\nwant\n%v", got, wantC)
	}
}

func indexOf(r *Recording, name string) int {
	for i, c := range r.Compartments {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// calls describes compartments: "name path build-id" to "call=count ...".
func calls(r *Recording) map[string]string {
	out := map[string]string{}
	for _, c := range r.Compartments {
		var parts []string
		for _, name := range sortedNames(c.Calls) {
			parts = append(parts, name+"="+strconv.FormatUint(c.Calls[name], 10))
		}
		out[c.Name+" "+c.Path+" "+c.BuildID] = strings.Join(parts, " ")
	}
	return out
}
