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
