package cell

import "testing"

func TestParseEntry(t *testing.T) {
	for _, tc := range []struct {
		line string
		want entry
		ok   bool
	}{
		{"39 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd2f80dd30 0x7f16bf5f5f16\n", entry{39, 0x7ffd2f80dd30, 0x7f16bf5f5f16}, true},
		{"running\n", entry{}, false},
		{"-1 0x7ffd2f80dd30 0x7f16bf5f5f16\n", entry{}, false},
		{"39 0x0 0x0 0x0 0x0 0x0 0x0 zz 0x1\n", entry{}, false},
	} {
		got, err := parseEntry(tc.line)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseEntry(%q) = %+v, %v; want %+v, ok %v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}
