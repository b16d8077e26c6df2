package sec_test

import (
	"context"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"

	"golang.org/x/sys/unix"

	"github.com/syscell/syscell/bench/sec"
)

// BenchmarkGetpidUnderFilter reports what getpid costs under a 10-call
// allowlist: ns/op in the kernel's action cache, the baseline under an
// allow-everything program, and with the cache defeated. b.N is the number
// of calls each child makes.
func BenchmarkGetpidUnderFilter(b *testing.B) {
	filtertest.RequireSeccomp(b)
	prog := allowlist(b, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM),
		unix.SYS_READ, unix.SYS_WRITE, unix.SYS_CLOSE, unix.SYS_FSTAT, unix.SYS_MMAP,
		unix.SYS_FUTEX, unix.SYS_EXIT_GROUP, unix.SYS_RT_SIGRETURN, unix.SYS_PPOLL, unix.SYS_GETPID)
	calls := []sec.Call{{Name: "getpid", Nr: unix.SYS_GETPID}}
	rep, err := sec.Run(context.Background(), prog, calls, sec.Options{CallsPerRun: b.N, Runs: 1})
	if err != nil {
		b.Fatal(err)
	}
	s := rep.Syscalls[0]
	b.ReportMetric(s.Cached.NsPerCall, "ns/op")
	b.ReportMetric(s.Allow.NsPerCall, "allow-ns/op")
	b.ReportMetric(s.Uncached.NsPerCall, "uncached-ns/op")
}
