package mech

import (
	"context"
	"errors"
	"testing"

	"github.com/syscell/syscell/filter/filtertest"
)

// BenchmarkGetpid reports what one getpid costs under each mechanism, as
// timed by the payload: b.N is the number of calls one payload makes.
func BenchmarkGetpid(b *testing.B) {
	filtertest.RequireSeccomp(b)
	for _, m := range Mechanisms() {
		b.Run("mech="+string(m), func(b *testing.B) {
			if err := Available(m); errors.Is(err, ErrUnavailable) {
				b.Skipf("SKIPPED: %v", err)
			}
			s, err := Measure(context.Background(), m, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(s.LoopNs)/float64(b.N), "ns/op")
		})
	}
}
