package privilege

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/syscell/syscell/policy"
)

// failures are the exact errors of the testdata/fail_* files; JSON has no
// comments to hold them. Every file must have one, and every entry a file.
var failures = map[string]string{
	"fail_syso_syntax.json":            `fail_syso_syntax.json:3: JSON syntax: invalid character '"' after object key:value pair`,
	"fail_syso_truncated.json":         `fail_syso_truncated.json:2: JSON syntax: unexpected EOF`,
	"fail_syso_number_range.json":      `fail_syso_number_range.json:4: "/usr/lib/liba.so": syscall number 999 out of range (x86_64 numbers go from 0 to 467)`,
	"fail_syso_number_undefined.json":  `fail_syso_number_undefined.json:3: "/usr/lib/libb.so": no x86_64 syscall has number 400`,
	"fail_syso_number_name.json":       `fail_syso_number_name.json:2: "/usr/lib/liba.so": syscall number "read" is not a decimal number`,
	"fail_syso_count_string.json":      `fail_syso_count_string.json:2: "/usr/lib/liba.so": the count of syscall 0 must be a whole number, not a string`,
	"fail_syso_count_fraction.json":    `fail_syso_count_fraction.json:2: "/usr/lib/liba.so": the count of syscall 0 must be a whole number, not the number 1.5`,
	"fail_syso_duplicate.json":         `fail_syso_duplicate.json:3: syso's counts: "/usr/lib/liba.so" given twice (first at line 2)`,
	"fail_syso_array.json":             `fail_syso_array.json:3: the counts of "/usr/lib/libb.so" must be a JSON object, not an array`,
	"fail_syso_empty.json":             `fail_syso_empty.json:1: no compartments: the counts name no library`,
	"fail_syso_trailing.json":          `fail_syso_trailing.json:4: data after the JSON object`,
	"fail_whitelist_string.toml":       `fail_whitelist_string.toml:2: "liba.so": want syscall numbers, found string`,
	"fail_whitelist_number_range.toml": `fail_whitelist_number_range.toml:4: "liba.so": syscall number 1000 out of range (x86_64 numbers go from 0 to 467)`,
	"fail_whitelist_negative.toml":     `fail_whitelist_negative.toml:2: "liba.so": syscall number -1 out of range (x86_64 numbers go from 0 to 467)`,
	"fail_whitelist_dotted.toml":       `fail_whitelist_dotted.toml:2: dotted key: quote a file name that holds dots, as in "libc.so.6" = [...]`,
	"fail_whitelist_table.toml":        `fail_whitelist_table.toml:4: unexpected table: an addrfilter whitelist holds one [files] table and nothing else`,
	"fail_whitelist_empty.toml":        `fail_whitelist_empty.toml:2: no files: the whitelist names no library`,
	"fail_whitelist_syntax.toml":       `fail_whitelist_syntax.toml:3: TOML syntax: array is incomplete`,
	"fail_whitelist_duplicate.toml":    `fail_whitelist_duplicate.toml:3: "liba.so" given twice (first at line 2)`,
	"fail_whitelist_not_array.toml":    `fail_whitelist_not_array.toml:2: "liba.so" must be an array of syscall numbers, found integer`,
	"fail_policy_syscall.toml":         `fail_policy_syscall.toml:6: unknown syscall "raed"`,
}

func TestLoadFailures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fail_*"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, path := range paths {
		name := filepath.Base(path)
		seen[name] = true
		want, ok := failures[name]
		if !ok {
			t.Errorf("%s: no expected error in failures", name)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Parse(name, data, opt)
		var perr *policy.Error
		if !errors.As(err, &perr) || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s (a *policy.Error)", name, err, want)
		}
	}
	for name := range failures {
		if !seen[name] {
			t.Errorf("failures lists %s, which testdata lacks", name)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "missing.json"), opt)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v, want one that is os.ErrNotExist", err)
	}
}

// TestLoadWarnings checks that an OCI import's warnings come back.
func TestLoadWarnings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.json")
	src := `{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "nosuchcall"], "action": "SCMP_ACT_ALLOW"}]}`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	a, warnings, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || a.Format != OCI || len(a.Compartments[0].Syscalls) != 1 {
		t.Errorf("warnings %q, format %s, syscalls %v: want one warning, about nosuchcall, and read allowed", warnings, a.Format, a.Compartments[0].Syscalls)
	}
}
