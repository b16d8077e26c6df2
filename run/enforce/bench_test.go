package enforce_test

import (
	"strconv"
	"testing"

	"github.com/syscell/syscell/run/enforce"
)

// BenchmarkStart is what starting /bin/true under Docker's profile costs:
// the shim, its Go runtime, the install and the command itself. Audit adds
// the listener's hand-over and the gate's round trip.
func BenchmarkStart(b *testing.B) {
	for _, mode := range []enforce.Mode{enforce.Enforce, enforce.Audit} {
		b.Run(mode.String(), func(b *testing.B) {
			r := load(b, "runtime-default", "")
			requireKernel(b)
			for b.Loop() {
				if res, _ := launch(b, r, enforce.Options{Mode: mode}, "/bin/true"); res.ExitCode != 0 {
					b.Fatalf("exit %d, signal %v", res.ExitCode, res.Signal)
				}
			}
		})
	}
}

// BenchmarkDeniedCall is the cost of one call outside the policy in each
// mode: in enforce mode the kernel answers it, in audit and complain
// modes the supervisor does, through a notification.
func BenchmarkDeniedCall(b *testing.B) {
	calls := fixture(b, "calls")
	for _, mode := range []enforce.Mode{enforce.Enforce, enforce.Audit, enforce.Complain} {
		b.Run(mode.String(), func(b *testing.B) {
			r := load(b, "deny.toml", "errno(EPERM)")
			n := strconv.Itoa(b.N)
			b.ResetTimer()
			res, _ := launch(b, r, enforce.Options{Mode: mode}, calls, "loop", n)
			if res.ExitCode != 0 || mode != enforce.Enforce && res.Calls[0].Count != b.N {
				b.Fatalf("exit %d, calls %+v; want %d getppid", res.ExitCode, res.Calls, b.N)
			}
		})
	}
}
