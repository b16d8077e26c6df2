package record

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMerge merges the recordings of each testdata/merge directory, in
// every order, and compares the policy with its want.toml (go test
// -update rewrites them).
func TestMerge(t *testing.T) {
	dirs, err := filepath.Glob("testdata/merge/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			recs := loadInputs(t, dir)
			var first []byte
			for _, order := range orders(len(recs)) {
				var shuffled []*Recording
				for _, i := range order {
					shuffled = append(shuffled, recs[i])
				}
				merged, err := Merge(shuffled...)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := merged.WriteTOML(&got); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = got.Bytes()
				} else if !bytes.Equal(first, got.Bytes()) {
					t.Fatalf("order %v gives another policy:\n%s", order, got.Bytes())
				}
			}
			golden(t, filepath.Join(dir, "want.toml"), first)
		})
	}
}

// loadInputs loads every file of dir but want.toml.
func loadInputs(t *testing.T, dir string) []*Recording {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []*Recording
	for _, f := range files {
		if filepath.Base(f) == "want.toml" {
			continue
		}
		rec, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// orders lists every permutation of 0..n-1.
func orders(n int) [][]int {
	if n == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for _, rest := range orders(n - 1) {
		for i := 0; i <= len(rest); i++ {
			out = append(out, slices.Insert(slices.Clone(rest), i, n-1))
		}
	}
	return out
}

// golden compares got with the file at path, which -update rewrites.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// TestMergePhasesDiffer merges a recording with phases with one without,
// and recordings serving from different calls: errors that name both
// files, in either order.
func TestMergePhasesDiffer(t *testing.T) {
	dir := t.TempDir()
	write := func(name, header string) *Recording {
		path := filepath.Join(dir, name)
		data := "version = 1\ndefault = \"errno(EPERM)\"\n" + header +
			"[[compartment]]\nname = \"/usr/bin/server\"\npath = \"/usr/bin/server\"\nsyscalls = [\"epoll_wait\", \"poll\"]\n"
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		rec, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	phased := write("phased.toml", "serving-from = [\"epoll_wait\"]\n")
	unphased := write("unphased.toml", "")
	poll := write("poll.toml", "serving-from = [\"poll\"]\n")
	for _, c := range []struct {
		a, b *Recording
		want string
	}{
		{phased, unphased, `record: %[1]s/phased.toml has phases (serving from epoll_wait) and %[1]s/unphased.toml has none: merge recordings made alike (record --phases)`},
		{phased, poll, `record: %[1]s/phased.toml serves from epoll_wait and %[1]s/poll.toml from poll: merge recordings made with the same --serving-from`},
	} {
		want := fmt.Sprintf(c.want, dir)
		for _, order := range [][]*Recording{{c.a, c.b}, {c.b, c.a}, {c.a, c.a, c.b}} {
			_, err := Merge(order...)
			if err == nil {
				t.Errorf("merged %s", want)
				continue
			}
			// The first message names the files in its own order.
			if order[0] == c.a && err.Error() != want {
				t.Errorf("error %v\nwant       %s", err, want)
			}
			for _, rec := range []*Recording{c.a, c.b} {
				if !strings.Contains(err.Error(), rec.Source) {
					t.Errorf("error %v does not name %s", err, rec.Source)
				}
			}
		}
	}
}

// TestServingCalls: a policy's serving set is what its compartment
// called while serving, nothing more, whatever else it called: a lagging
// thread's calls are among them as the recorder counted them.
func TestServingCalls(t *testing.T) {
	calls := map[string]uint64{"rseq": 2, "set_robust_list": 2, "mmap": 5, "rt_sigprocmask": 1, "prctl": 1, "epoll_wait": 1}
	for _, name := range []string{RuntimeName, "/usr/lib/libjemalloc.so.2"} {
		rec := &Recording{ServingFrom: []string{"epoll_wait"}, Compartments: []*Compartment{
			{Name: name, Calls: calls, Serving: map[string]uint64{"epoll_wait": 1, "prctl": 1}}}}
		p, _ := rec.Policy()
		if got, want := p.Compartments[0].Serving, []string{"epoll_wait", "prctl"}; !slices.Equal(got, want) {
			t.Errorf("%s: serving %v, want %v", name, got, want)
		}
	}
}
