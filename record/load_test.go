package record

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadFailures holds the error of each fail_*.json vector.
var loadFailures = map[string]string{
	"fail_syso_number.json": `fail_syso_number.json:3: compartment "/usr/bin/x": no x86_64 syscall has number 9999`,
	"fail_syso_name.json":   `fail_syso_name.json:3: compartment "/usr/bin/x": "getpid" is not a syscall number`,
	"fail_syso_type.json":   `fail_syso_type.json:2: syso JSON: json: cannot unmarshal array into Go value of type map[string]uint64`,
	"fail_syso_syntax.json": `fail_syso_syntax.json:4: syso JSON: unexpected end of JSON input`,
}

// TestLoadFailures loads every fail_* vector and checks the error.
func TestLoadFailures(t *testing.T) {
	files, err := filepath.Glob("testdata/fail_*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want := loadFailures[name]
			if strings.HasSuffix(name, ".toml") {
				want = firstLineError(t, f)
			}
			if want == "" {
				t.Fatalf("no expected error for %s", name)
			}
			wd, err := os.Getwd()
			if err != nil {
				t.Fatal(err)
			}
			t.Chdir(filepath.Join(wd, "testdata"))
			_, err = Load(name)
			if err == nil || err.Error() != want {
				t.Errorf("error %v\nwant       %s", err, want)
			}
		})
	}
}

// firstLineError reads "# error: ..." from a vector's first line.
func firstLineError(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	want, ok := strings.CutPrefix(sc.Text(), "# error: ")
	if !ok {
		t.Fatalf("%s does not start with \"# error: \"", path)
	}
	return want
}
