package cell

import (
	"testing"
	"time"
)

func TestLatencyBuckets(t *testing.T) {
	for _, ns := range []uint64{8, 9, 15, 16, 100, 1000, 4096, 4500, 1e6, 1e9, 1 << 62} {
		b := bucketOf(ns)
		lo, hi := uint64(lowerBound(b)), uint64(lowerBound(b+1))
		if ns < lo || ns >= hi {
			t.Errorf("%d ns in bucket %d, [%d, %d)", ns, b, lo, hi)
		}
		if float64(hi-lo) > float64(lo)/8 {
			t.Errorf("bucket %d of %d ns is [%d, %d): wider than an eighth", b, ns, lo, hi)
		}
	}
}

func TestLatencyQuantiles(t *testing.T) {
	var l latencies
	if s := l.summary(); s.Median != 0 || s.P99 != 0 || s.Calls != 0 {
		t.Errorf("no calls: %+v", s)
	}
	for i := range 1000 {
		d := 10 * time.Microsecond
		if i >= 990 {
			d = time.Millisecond
		}
		l.took(d)
	}
	s := l.summary()
	within := func(got, want time.Duration) bool { return got <= want && got > want*7/8 }
	if s.Calls != 1000 || !within(s.Median, 10*time.Microsecond) || !within(s.P99, 10*time.Microsecond) {
		t.Errorf("990 calls of 10 µs, 10 of 1 ms: %+v", s)
	}
	l.took(time.Millisecond)
	if s := l.summary(); !within(s.P99, time.Millisecond) {
		t.Errorf("with 11 of 1 ms in 1001: p99 %v, want about 1 ms", s.P99)
	}
}
