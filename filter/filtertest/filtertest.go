// Package filtertest holds what tests that install seccomp programs share.
package filtertest

import (
	"errors"
	"runtime"
	"testing"

	"github.com/syscell/syscell/filter"
)

// RequireSeccomp skips the test, saying why, where the kernel cannot
// install the x86_64 seccomp programs the tests build; any other failure
// to probe fails it.
func RequireSeccomp(tb testing.TB) {
	tb.Helper()
	if runtime.GOARCH != "amd64" {
		tb.Skipf("SKIPPED: the test programs are x86_64's, this is %s", runtime.GOARCH)
	}
	err := filter.Supported()
	if errors.Is(err, filter.ErrNotSupported) {
		tb.Skipf("SKIPPED: this kernel cannot install seccomp filters: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
}
