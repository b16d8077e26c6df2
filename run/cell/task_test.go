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

func TestParseBorn(t *testing.T) {
	const fields = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21\n"
	for _, tc := range []struct {
		line string
		want uint64
		ok   bool
	}{
		{"77 (redis-server) " + fields, 4242 * 1e7, true},
		{"77 (a) b) (c) " + fields, 4242 * 1e7, true},
		{"77 (short) S 1 2 3\n", 0, false},
		{"77 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 zz\n", 0, false},
	} {
		got, err := parseBorn(tc.line)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBorn(%q) = %d, %v; want %d, ok %v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}
