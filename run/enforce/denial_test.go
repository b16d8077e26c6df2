package enforce

import "testing"

func TestDenialString(t *testing.T) {
	for _, tc := range []struct {
		d    Denial
		want string
	}{
		{Denial{ABI: "x86_64", Syscall: "mkdir", IP: 0x401000, Action: "errno(EPERM)"}, "mkdir at 0x401000 (errno(EPERM))"},
		{Denial{ABI: "i386", Syscall: "mkdir", IP: 0x1000, Action: "kill-process"}, "i386 mkdir at 0x1000 (kill-process)"},
		{Denial{ABI: "x86_64", Syscall: "openat", IP: 0x7f00, Compartment: "libserve.so", Serving: true, Action: "errno(EPERM)"},
			"openat by libserve.so while serving at 0x7f00 (errno(EPERM))"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}
