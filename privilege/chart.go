package privilege

import (
	"fmt"

	"github.com/syscell/syscell/plot"
)

// Chart draws s as bars: one per compartment, in file order, then the
// union, set apart. rankingName names the ranking in the title.
func (s Score) Chart(rankingName string) plot.Bars {
	c := plot.Bars{
		Title: fmt.Sprintf("P_A %d, P_seccomp %d: privilege reduced by %.2f%% (ranking %s)",
			s.App(), s.Seccomp(), s.Reduction(), rankingName),
		XLabel: "privilege P_C: the sum of the danger scores of the compartment's syscalls",
	}
	for _, cs := range s.Compartments {
		c.Bars = append(c.Bars, plot.Bar{Label: cs.Name, Value: float64(cs.Privilege)})
	}
	c.Bars = append(c.Bars, plot.Bar{Label: UnionName, Value: float64(s.Seccomp()), Emphasis: true})
	return c
}
