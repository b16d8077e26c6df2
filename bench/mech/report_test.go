package mech

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what was written (go test -update rewrites it):\n%s", path, got)
	}
}

// fixedReport is a report with made-up times: ptrace and user-notif stop
// at the slow limit, eBPF is skipped.
func fixedReport() Report {
	r := newReport(Options{
		Iterations: []int{10, 1000, 100_000},
		Runs:       3,
		Mechanisms: Mechanisms(),
		SlowLimit:  1000,
	})
	perCall := map[Mechanism]int64{None: 120, Seccomp: 155, SeccompUncached: 195, SeccompStacked: 235, UserNotif: 4400, Supervised: 7500, SupervisedProc: 9500, Ptrace: 14500, SeccompTrace: 7700}
	for i := range r.Series {
		s := &r.Series[i]
		if s.Mechanism == EBPF {
			s.Skipped = "unavailable: loading an eBPF program needs CAP_BPF and CAP_PERFMON (root)"
			continue
		}
		for j := range s.Points {
			p := &s.Points[j]
			if p.Skipped != "" {
				continue
			}
			for run := range int64(3) {
				ns := perCall[s.Mechanism]*int64(p.Iterations) + 1000*run
				sample := Sample{LoopNs: ns}
				if specs[s.Mechanism].observed() {
					sample.Intercepted = uint64(p.Iterations)
				}
				p.Runs = append(p.Runs, sample)
			}
		}
	}
	r.summarize()
	return r
}

func TestReportOutputs(t *testing.T) {
	r := fixedReport()
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	svg, err := r.Chart().SVG()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", table.Bytes())
	golden(t, "report.json", js.Bytes())
	golden(t, "report.svg", svg)
}

func TestSummary(t *testing.T) {
	r := fixedReport()
	for _, tc := range []struct {
		m          Mechanism
		point      int
		mean, med  float64
		perCall    float64
		vsSeccomp  float64
		hasRatio   bool
		measured   bool
		skipReason bool
	}{
		{m: Seccomp, point: 0, mean: 2550, med: 2550, perCall: 255, vsSeccomp: 1, hasRatio: true, measured: true},
		{m: None, point: 1, mean: 121000, med: 121000, perCall: 121, vsSeccomp: 121000.0 / 156000, hasRatio: true, measured: true},
		{m: Ptrace, point: 1, mean: 14501000, med: 14501000, perCall: 14501, vsSeccomp: 14501000.0 / 156000, hasRatio: true, measured: true},
		{m: Ptrace, point: 2, skipReason: true},
		{m: EBPF, point: 0},
	} {
		p := r.series(tc.m).Points[tc.point]
		if got := len(p.Runs) > 0; got != tc.measured {
			t.Errorf("%s at %d: measured %t, want %t", tc.m, p.Iterations, got, tc.measured)
		}
		if got := p.Skipped != ""; got != tc.skipReason {
			t.Errorf("%s at %d: skipped %q, want a reason: %t", tc.m, p.Iterations, p.Skipped, tc.skipReason)
		}
		if p.MeanNs != tc.mean || p.MedianNs != tc.med || p.NsPerCall != tc.perCall {
			t.Errorf("%s at %d: mean %v, median %v, per call %v; want %v, %v, %v", tc.m, p.Iterations, p.MeanNs, p.MedianNs, p.NsPerCall, tc.mean, tc.med, tc.perCall)
		}
		if (p.VsSeccomp != nil) != tc.hasRatio || (p.VsSeccomp != nil && *p.VsSeccomp != tc.vsSeccomp) {
			t.Errorf("%s at %d: ratio %v, want %v", tc.m, p.Iterations, p.VsSeccomp, tc.vsSeccomp)
		}
	}
}

func TestSummaryWithoutSeccomp(t *testing.T) {
	r := newReport(Options{Iterations: []int{10}, Runs: 1, Mechanisms: []Mechanism{None}})
	r.Series[0].Points[0].Runs = []Sample{{LoopNs: 1200}}
	r.summarize()
	if p := r.Series[0].Points[0]; p.VsSeccomp != nil || p.NsPerCall != 120 {
		t.Errorf("without seccomp: ratio %v, per call %v; want none, 120", p.VsSeccomp, p.NsPerCall)
	}
}

func TestSignificant(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		digits int
		want   string
	}{
		{0.0012345, 3, "0.00123"},
		{1.2345, 3, "1.23"},
		{12.345, 3, "12.3"},
		{1234.5, 3, "1234"},
		{14500.4, 4, "14500"},
		{155.04, 4, "155.0"},
		{0, 3, "0"},
	} {
		if got := significant(tc.v, tc.digits); got != tc.want {
			t.Errorf("significant(%v, %d) = %q, want %q", tc.v, tc.digits, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}
