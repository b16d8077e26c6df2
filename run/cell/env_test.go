package cell

import (
	"slices"
	"strings"
	"testing"
)

func TestProgramEnv(t *testing.T) {
	env := programEnv([]string{"HOME=/root", "LD_AUDIT=/their/audit.so", "SYSCELL_CELL_FD=9", "SYSCELL_CELL=x", "PATH=/bin", "SYSCELL_CELL_SOCKET=/s"}, "/lib/audit.so", inheritedChannel, 8)
	want := []string{"HOME=/root", "PATH=/bin", "LD_AUDIT=/lib/audit.so", "SYSCELL_CELL_FD=3",
		"SYSCELL_CELL=" + strings.Repeat(" ", 8), "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096"}
	if !slices.Equal(env, want) {
		t.Errorf("programEnv:\n%q\nwant\n%q", env, want)
	}
}

func TestWithStaticTLS(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "glibc.rtld.optional_static_tls=4096"},
		{"glibc.malloc.check=3", "glibc.malloc.check=3:glibc.rtld.optional_static_tls=4096"},
		{"glibc.rtld.optional_static_tls=512:glibc.malloc.check=3", "glibc.malloc.check=3:glibc.rtld.optional_static_tls=4096"},
		{"glibc.rtld.optional_static_tls=65536", "glibc.rtld.optional_static_tls=65536"},
		{"glibc.rtld.optional_static_tls=junk", "glibc.rtld.optional_static_tls=4096"},
	} {
		if got := withStaticTLS(tc.in); got != tc.want {
			t.Errorf("withStaticTLS(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
