package infer

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syscell/syscell/attribute"
	"github.com/syscell/syscell/record"
)

// TestDebianPrograms records the Debian programs of testdata/programs.txt
// and checks that every call each run made is inferred for the same
// compartment: 0 calls recorded but not inferred.
func TestDebianPrograms(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: recording loads an eBPF program, which needs root")
	}
	dir := scratch(t)
	for _, args := range programs(t, dir) {
		t.Run(filepath.Base(args[0]), func(t *testing.T) {
			if _, err := os.Stat(args[0]); err != nil {
				t.Fatalf("%v (scripts/install-deps.sh installs it)", err)
			}
			rec := recordRun(t, args)
			checkBound(t, rec, args[0])
		})
	}
}

// TestServerPolicies checks the recorded policies of the servers in
// docs/servers against the inference of the same programs.
func TestServerPolicies(t *testing.T) {
	servers := map[string]string{
		"redis":    "/usr/bin/redis-server",
		"nginx":    "/usr/sbin/nginx",
		"postgres": "/usr/lib/postgresql/15/bin/postgres",
		"fio":      "/usr/bin/fio",
	}
	for name, exe := range servers {
		t.Run(name, func(t *testing.T) {
			rec, err := record.Load(filepath.Join("..", "docs", "servers", name+".toml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rec.Compartments {
				if c.Path == "" {
					continue
				}
				if id, err := attribute.FileBuildID(c.Path); err != nil || id != c.BuildID {
					t.Fatalf("%s is not the recorded build (%s, want %s: %v): record the server again (bench/servers/record.sh)", c.Path, id, c.BuildID, err)
				}
			}
			checkBound(t, rec, exe)
		})
	}
}

// checkBound fails for every call of rec that the inference of exe (and
// of the programs and libraries rec saw) does not cover.
func checkBound(t *testing.T, rec *record.Recording, exe string) {
	t.Helper()
	inferred, err := Bound(rec, exe, options())
	if err != nil {
		t.Fatal(err)
	}
	report := Compare(rec, inferred)
	if report.FalseNegatives() > 0 {
		var b strings.Builder
		report.Write(&b)
		t.Errorf("calls recorded but not inferred:\n%s", b.String())
	}
}

// scratch makes the files programs.txt's commands work on.
func scratch(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"text":           "banana\napple\ncherry\n",
		"data.json":      `{"a": [1, 2, 3]}` + "\n",
		"tree/file":      "a file in a tree\n",
		"tree/sub/other": "another\n",
	}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// programs reads testdata/programs.txt: a command a line, split at the
// first two spaces (program, first argument, the rest as one argument
// when the program is python3, perl or sqlite3, whose scripts have
// spaces), $DIR replaced.
func programs(t *testing.T, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "programs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.ReplaceAll(sc.Text(), "$DIR", dir)
		if line == "" || line[0] == '#' {
			continue
		}
		var args []string
		switch name := filepath.Base(strings.Fields(line)[0]); name {
		case "python3", "perl", "sqlite3":
			args = strings.SplitN(line, " ", 3)
		default:
			args = strings.Fields(line)
		}
		out = append(out, args)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
