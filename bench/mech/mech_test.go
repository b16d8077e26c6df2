package mech

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syscell/syscell/filter/filtertest"
)

// TestRun runs the whole benchmark with few calls and checks that every
// mechanism timed every loop and that its tracer, supervisor or eBPF
// program saw every call.
func TestRun(t *testing.T) {
	filtertest.RequireSeccomp(t)
	opts := Options{Iterations: []int{10, 100}, Runs: 1}
	r, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []Mechanism
	for _, s := range r.Series {
		got = append(got, s.Mechanism)
		t.Run(string(s.Mechanism), func(t *testing.T) { checkSeries(t, s, opts) })
	}
	if !slices.Equal(got, Mechanisms()) {
		t.Errorf("mechanisms measured: %v, want %v", got, Mechanisms())
	}
}

func checkSeries(t *testing.T, s Series, opts Options) {
	if s.Skipped != "" {
		if s.Mechanism == EBPF && os.Geteuid() == 0 {
			t.Fatalf("eBPF skipped although this process is root: %s", s.Skipped)
		}
		t.Skipf("SKIPPED: %s", s.Skipped)
	}
	if len(s.Points) != len(opts.Iterations) {
		t.Fatalf("%d points, want %d", len(s.Points), len(opts.Iterations))
	}
	for i, p := range s.Points {
		if p.Iterations != opts.Iterations[i] || len(p.Runs) != opts.Runs {
			t.Fatalf("point %d: %d calls, %d runs; want %d, %d", i, p.Iterations, len(p.Runs), opts.Iterations[i], opts.Runs)
		}
		var want uint64
		if specs[s.Mechanism].observed() {
			want = uint64(p.Iterations)
		}
		for _, run := range p.Runs {
			if run.LoopNs <= 0 {
				t.Errorf("%d calls: the loop took %d ns", p.Iterations, run.LoopNs)
			}
			if run.Intercepted != want {
				t.Errorf("%d calls: %d intercepted, want %d", p.Iterations, run.Intercepted, want)
			}
		}
		if p.MeanNs <= 0 || p.MedianNs <= 0 || p.VsSeccomp == nil {
			t.Errorf("%d calls: mean %v, median %v, ratio %v: not summarized", p.Iterations, p.MeanNs, p.MedianNs, p.VsSeccomp)
		}
	}
}

func TestSlowLimit(t *testing.T) {
	filtertest.RequireSeccomp(t)
	opts := Options{Iterations: []int{10, 20}, Runs: 1, Mechanisms: []Mechanism{Seccomp, Ptrace}, SlowLimit: 10}
	r, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m        Mechanism
		point    int
		measured bool
	}{
		{Seccomp, 0, true}, {Seccomp, 1, true}, {Ptrace, 0, true}, {Ptrace, 1, false},
	} {
		p := r.series(tc.m).Points[tc.point]
		if got := len(p.Runs) > 0; got != tc.measured || got == (p.Skipped != "") {
			t.Errorf("%s at %d calls: %d runs, skipped %q; want measured %t", tc.m, p.Iterations, len(p.Runs), p.Skipped, tc.measured)
		}
	}
}

// TestCancel checks that cancelling the context kills a payload that
// would take hours under ptrace.
func TestCancel(t *testing.T) {
	filtertest.RequireSeccomp(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Measure(ctx, Ptrace, 1_000_000_000)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled ptrace payload: %v, want DeadlineExceeded", err)
	}
}

// TestPayloadReportsErrors starts a payload with a request it cannot
// honour and checks that its error reaches the parent with its exit
// status.
func TestPayloadReportsErrors(t *testing.T) {
	filtertest.RequireSeccomp(t)
	p, err := start(context.Background(), request{Mechanism: "bogus", Iterations: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	_, err = p.run(nil)
	want := `payload: unknown mechanism "bogus" (the payload exited with status 1)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("payload with a bogus request: %v, want %q", err, want)
	}
}

func TestBadArguments(t *testing.T) {
	ctx := context.Background()
	if _, err := Measure(ctx, "bogus", 1); err == nil || !strings.Contains(err.Error(), `unknown mechanism "bogus"`) {
		t.Errorf("Measure of an unknown mechanism: %v", err)
	}
	if _, err := Measure(ctx, None, -1); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("Measure of -1 calls: %v", err)
	}
	for _, opts := range []Options{
		{Iterations: []int{10, 0}},
		{Runs: -1},
		{SlowLimit: -1},
		{Mechanisms: []Mechanism{None, "bogus"}},
	} {
		if _, err := Run(ctx, opts); err == nil {
			t.Errorf("Run(%+v) accepted bad options", opts)
		}
	}
}

func TestParseMechanism(t *testing.T) {
	for _, m := range Mechanisms() {
		got, err := ParseMechanism(string(m))
		if err != nil || got != m {
			t.Errorf("ParseMechanism(%q) = %q, %v", m, got, err)
		}
		if m.Description() == "" {
			t.Errorf("%s has no description", m)
		}
	}
	if _, err := ParseMechanism("seccomp "); err == nil {
		t.Error(`ParseMechanism("seccomp ") accepted a name with a space`)
	}
}

func TestPayloadEnviron(t *testing.T) {
	for _, tc := range []struct {
		env, want []string
	}{
		{
			env:  []string{"HOME=/root"},
			want: []string{PayloadEnv + `={"mechanism":"ptrace","iterations":7}`, "HOME=/root", "GODEBUG=asyncpreemptoff=1"},
		},
		{
			env:  []string{"GODEBUG=madvdontneed=1", PayloadEnv + "=stale"},
			want: []string{PayloadEnv + `={"mechanism":"ptrace","iterations":7}`, "GODEBUG=madvdontneed=1,asyncpreemptoff=1"},
		},
	} {
		got, err := payloadEnviron(tc.env, request{Mechanism: Ptrace, Iterations: 7})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("payloadEnviron(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
