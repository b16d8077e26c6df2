package cell

import "testing"

// TestHardwareOf reads the CPU's flags as /proc/cpuinfo gives them: this
// machine's (neither feature), and a CPU with both.
func TestHardwareOf(t *testing.T) {
	for _, tc := range []struct {
		cpuinfo string
		want    Hardware
	}{
		{"processor\t: 0\nflags\t\t: fpu vme sse sse2 avx2 smep\n", Hardware{}},
		{"flags\t\t: fpu pku ospke avx512f user_shstk ibt\nflags\t\t: fpu\n", Hardware{ProtectionKeys: true, ShadowStacks: true}},
		{"flags\t\t: fpu pku\n", Hardware{}},
	} {
		if got := hardwareOf(tc.cpuinfo); got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.cpuinfo, got, tc.want)
		}
	}
}
