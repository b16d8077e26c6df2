package privilege

import (
	"reflect"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/syscell/syscell/plot"
)

// TestChart checks the bars of testdata/score/syso_two_libs.txtar's first
// vector (liba 7, libb 6, union 12 under younis2014), the union set apart.
func TestChart(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/score/syso_two_libs.txtar")
	if err != nil {
		t.Fatal(err)
	}
	a := parse(t, ar.Files[0])
	got := a.Score(loadRanking(t, "younis2014")).Chart("younis2014")
	want := []plot.Bar{
		{Label: "/usr/lib/liba.so", Value: 7},
		{Label: "/usr/lib/libb.so", Value: 6},
		{Label: "seccomp (union)", Value: 12, Emphasis: true},
	}
	if !reflect.DeepEqual(got.Bars, want) {
		t.Errorf("bars %+v, want %+v", got.Bars, want)
	}
	if wantTitle := "P_A 7, P_seccomp 12: privilege reduced by 41.67% (ranking younis2014)"; got.Title != wantTitle {
		t.Errorf("title %q, want %q", got.Title, wantTitle)
	}
}

// TestChartPhases checks the bars of testdata/score/syscell_phases.txtar
// under younis2014: each compartment's, then its serving phase's.
func TestChartPhases(t *testing.T) {
	ar, err := txtar.ParseFile("testdata/score/syscell_phases.txtar")
	if err != nil {
		t.Fatal(err)
	}
	a := parse(t, ar.Files[0])
	got := a.Score(loadRanking(t, "younis2014")).Chart("younis2014")
	want := []plot.Bar{
		{Label: "server", Value: 11},
		{Label: "server (serving)", Value: 3},
		{Label: "libc.so.6", Value: 5},
		{Label: "libc.so.6 (serving)", Value: 4},
		{Label: "liblog.so", Value: 2},
		{Label: "liblog.so (serving)", Value: 2},
		{Label: "libinit.so", Value: 4},
		{Label: "libinit.so (serving)", Value: 0},
		{Label: "seccomp (union)", Value: 19, Emphasis: true},
		{Label: "seccomp (union) (serving)", Value: 7, Emphasis: true},
	}
	if !reflect.DeepEqual(got.Bars, want) {
		t.Errorf("bars %+v, want %+v", got.Bars, want)
	}
	wantTitle := "P_A 11, P_seccomp 19: reduced by 42.11%; serving P_A 4: by 78.95%, 42.86% by phase (ranking younis2014)"
	if got.Title != wantTitle {
		t.Errorf("title %q, want %q", got.Title, wantTitle)
	}
}
