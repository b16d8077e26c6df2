package cell

import (
	"math/bits"
	"time"
)

// latencies is a histogram of how long the supervisor took to answer
// calls, from receiving each to answering it: eight buckets an octave,
// each at most an eighth of its lower bound wide, so that its quantiles
// are within 12.5 % of the true ones, in a fixed size however many calls
// there were.
type latencies struct {
	buckets [64 * subBuckets]uint64
	n       uint64
}

const subBuckets = 8

// took adds a call that took d; less than 8 ns counts as 8.
func (l *latencies) took(d time.Duration) {
	l.buckets[bucketOf(uint64(max(d, subBuckets)))]++
	l.n++
}

// bucketOf is the bucket of ns nanoseconds, at least 8: its octave, then
// the three bits below the leading one.
func bucketOf(ns uint64) int {
	octave := bits.Len64(ns) - 1
	return octave*subBuckets + int(ns>>(octave-3))&(subBuckets-1)
}

// lowerBound is the least duration of bucket b.
func lowerBound(b int) time.Duration {
	octave, sub := b/subBuckets, uint64(b%subBuckets)
	return time.Duration((subBuckets + sub) << (octave - 3))
}

// quantile is the lower bound of the bucket that holds quantile q of the
// calls, 0 when there were none.
func (l *latencies) quantile(q float64) time.Duration {
	if l.n == 0 {
		return 0
	}
	rank := uint64(q*float64(l.n-1)) + 1
	var seen uint64
	for b, c := range l.buckets {
		if seen += c; seen >= rank {
			return lowerBound(b)
		}
	}
	return lowerBound(len(l.buckets) - 1)
}

// Latency is how long the supervisor took to answer the calls it
// decided, from receiving each to answering it.
type Latency struct {
	Calls  uint64        `json:"calls"`
	Median time.Duration `json:"median_ns"`
	P99    time.Duration `json:"p99_ns"`
}

func (l *latencies) summary() Latency {
	return Latency{Calls: l.n, Median: l.quantile(0.5), P99: l.quantile(0.99)}
}
