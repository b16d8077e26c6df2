package mech

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestPayloadFor picks the supervised payload next to a binary: the
// payload where there is one, the binary itself where it is linked
// dynamically, and none for a static binary alone.
func TestPayloadFor(t *testing.T) {
	const dynamic, static = "/bin/true", "/sbin/ldconfig"
	for _, f := range []string{dynamic, static} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("SKIPPED: no %s to copy: %v", f, err)
		}
	}
	copyTo := func(dir, name, from string) string {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withPayload, alone, dyn := t.TempDir(), t.TempDir(), t.TempDir()
	exe := copyTo(withPayload, "syscell", static)
	payload := copyTo(withPayload, PayloadName, dynamic)
	staticAlone := copyTo(alone, "syscell", static)
	dynamicAlone := copyTo(dyn, "syscell.test", dynamic)
	for _, tc := range []struct {
		name, exe, want string
		unavailable     bool
	}{
		{"a payload next to it", exe, payload, false},
		{"a dynamic binary alone", dynamicAlone, dynamicAlone, false},
		{"a static binary alone", staticAlone, "", true},
	} {
		got, err := payloadFor(tc.exe)
		if got != tc.want || errors.Is(err, ErrUnavailable) != tc.unavailable || (err != nil) != tc.unavailable {
			t.Errorf("%s: payloadFor = %q, %v; want %q, unavailable %v", tc.name, got, err, tc.want, tc.unavailable)
		}
	}
}
