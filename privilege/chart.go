package privilege

import (
	"fmt"

	"github.com/syscell/syscell/plot"
)

// Chart draws s as bars: one per compartment, in file order, then the
// union, set apart. With phases, each compartment's and the union's bar
// is followed by its serving phase's, labelled "(serving)", and the title
// gives the serving reduction and the phased one too. rankingName names
// the ranking in the title.
func (s Score) Chart(rankingName string) plot.Bars {
	c := plot.Bars{
		Title: fmt.Sprintf("P_A %d, P_seccomp %d: privilege reduced by %.2f%% (ranking %s)",
			s.App(), s.Seccomp(), s.Reduction(), rankingName),
		XLabel: "privilege P_C: the sum of the danger scores of the compartment's syscalls",
	}
	if s.Phased {
		c.Title = fmt.Sprintf("P_A %d, P_seccomp %d: reduced by %.2f%%; serving P_A %d: by %.2f%%, %.2f%% by phase (ranking %s)",
			s.App(), s.Seccomp(), s.Reduction(), s.AppServing(), s.ServingReduction(), s.PhasedReduction(), rankingName)
	}
	for _, cs := range s.Compartments {
		c.Bars = append(c.Bars, s.bars(cs, false)...)
	}
	c.Bars = append(c.Bars, s.bars(s.Union, true)...)
	return c
}

// bars are a compartment's bar, and its serving phase's with phases.
func (s Score) bars(c Scored, emphasis bool) []plot.Bar {
	bars := []plot.Bar{{Label: c.Name, Value: float64(c.Privilege), Emphasis: emphasis}}
	if s.Phased {
		bars = append(bars, plot.Bar{Label: c.Name + " (serving)", Value: float64(c.ServingPrivilege), Emphasis: emphasis})
	}
	return bars
}
