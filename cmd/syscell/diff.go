package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/syscell/syscell/privilege"
)

type diffCmd struct {
	policyFlags
	ranking rankingFlag
	jsonOut bool
}

func diffCommand() *cobra.Command {
	var c diffCmd
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare the syscalls and privilege of two policies' compartments",
		Long: `Compare two files that syscell score reads (in any of its formats, not
necessarily the same): the syscalls each compartment gained and lost, and
how its privilege changed, then the same for the union (P_seccomp), for
the application (P_A) and for the reduction. Compartments are matched by
build-id when both files give one, else by path (a compartment without a
path, such as syso's, by its name); one found in a single file is shown
against "-". When either file has phases (see syscell score), the same
follows for the serving phase, where a file without phases serves with all
of its calls, then the serving and phased reductions. The exit status is
0 whether or not the files differ.`,
		Example: `  syscell diff old.toml new.toml
  syscell diff syso.json policy.toml --ranking younis2014 --json`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0], args[1]) },
	}
	c.policyFlags.register(cmd)
	c.ranking.register(cmd)
	cmd.Flags().BoolVar(&c.jsonOut, "json", false, "print the comparison as JSON")
	return cmd
}

func (c *diffCmd) run(cmd *cobra.Command, oldPath, newPath string) error {
	r, err := c.ranking.load()
	if err != nil {
		return err
	}
	old, err := c.loadAllowlists(cmd, oldPath)
	if err != nil {
		return err
	}
	new, err := c.loadAllowlists(cmd, newPath)
	if err != nil {
		return err
	}
	d := privilege.Compare(old.Score(r), new.Score(r))
	var b bytes.Buffer
	if c.jsonOut {
		err = writeDiffJSON(&b, old, new, d, string(c.ranking))
	} else {
		writeDiff(&b, old, new, d, string(c.ranking))
	}
	if err != nil {
		return err
	}
	return write(cmd.OutOrStdout(), b.Bytes())
}

// writeDiff writes a table of the compartments and the union, each with
// the syscalls it gained (+) and lost (-), then the application's figures;
// with phases, the same for the serving phase.
func writeDiff(w io.Writer, old, new *privilege.Allowlists, d privilege.Diff, rankingName string) {
	fmt.Fprintf(w, "%s -> %s, ranking %s\n\n", describeFile(old), describeFile(new), rankingName)
	writeChanges(w, d, allCalls)
	fmt.Fprintf(w, "\nP_A        %d -> %d  (%+d)\n", d.Old.App(), d.New.App(), d.New.App()-d.Old.App())
	fmt.Fprintf(w, "P_seccomp  %d -> %d  (%+d)\n", d.Old.Seccomp(), d.New.Seccomp(), d.New.Seccomp()-d.Old.Seccomp())
	fmt.Fprintf(w, "reduction  %.2f%% -> %.2f%%  (%+.2f points)\n", d.Old.Reduction(), d.New.Reduction(),
		d.New.Reduction()-d.Old.Reduction())
	if !d.Phased() {
		return
	}
	fmt.Fprintf(w, "\nserving phase\n")
	writeChanges(w, d, servingCalls)
	fmt.Fprintf(w, "\nP_A serving        %d -> %d  (%+d)\n", d.Old.AppServing(), d.New.AppServing(),
		d.New.AppServing()-d.Old.AppServing())
	fmt.Fprintf(w, "P_seccomp serving  %d -> %d  (%+d)\n", d.Old.SeccompServing(), d.New.SeccompServing(),
		d.New.SeccompServing()-d.Old.SeccompServing())
	fmt.Fprintf(w, "serving reduction  %.2f%% -> %.2f%%  (%+.2f points)\n", d.Old.ServingReduction(),
		d.New.ServingReduction(), d.New.ServingReduction()-d.Old.ServingReduction())
	fmt.Fprintf(w, "phased reduction   %.2f%% -> %.2f%%  (%+.2f points)\n", d.Old.PhasedReduction(),
		d.New.PhasedReduction(), d.New.PhasedReduction()-d.Old.PhasedReduction())
}

// phase picks one phase's figures out of a compartment's change: its
// privilege in each file, and the syscalls it gained and lost.
type phase struct {
	privilege      func(*privilege.Scored) int
	delta          func(privilege.Change) int
	added, removed func(privilege.Change) []string
}

var (
	allCalls = phase{
		privilege: func(s *privilege.Scored) int { return s.Privilege },
		delta:     privilege.Change.Delta,
		added:     func(c privilege.Change) []string { return c.Added },
		removed:   func(c privilege.Change) []string { return c.Removed },
	}
	servingCalls = phase{
		privilege: func(s *privilege.Scored) int { return s.ServingPrivilege },
		delta:     privilege.Change.ServingDelta,
		added:     func(c privilege.Change) []string { return c.ServingAdded },
		removed:   func(c privilege.Change) []string { return c.ServingRemoved },
	}
)

// writeChanges writes the table of one phase.
func writeChanges(w io.Writer, d privilege.Diff, p phase) {
	rows := append(append([]privilege.Change{}, d.Compartments...), d.Union)
	width := len("compartment")
	for _, c := range rows {
		width = max(width, len(c.Name()))
	}
	fmt.Fprintf(w, "%-*s  %5s  %5s  %6s  %s\n", width, "compartment", "old", "new", "change", "syscalls")
	for _, c := range rows {
		row := fmt.Sprintf("%-*s  %5s  %5s  %+6d  %s", width, c.Name(), p.text(c.Old), p.text(c.New),
			p.delta(c), p.changedSyscalls(c))
		fmt.Fprintln(w, strings.TrimRight(row, " ")) // an unchanged compartment lists no syscalls
	}
}

// text is a compartment's privilege, or "-" for a file without it.
func (p phase) text(s *privilege.Scored) string {
	if s == nil {
		return "-"
	}
	return strconv.Itoa(p.privilege(s))
}

// changedSyscalls lists the added syscalls marked "+", then the removed
// ones marked "-".
func (p phase) changedSyscalls(c privilege.Change) string {
	var parts []string
	for _, name := range p.added(c) {
		parts = append(parts, "+"+name)
	}
	for _, name := range p.removed(c) {
		parts = append(parts, "-"+name)
	}
	return strings.Join(parts, " ")
}

// diffJSON is a comparison for machines.
type diffJSON struct {
	Old          string       `json:"old"`
	New          string       `json:"new"`
	Ranking      string       `json:"ranking"`
	Compartments []changeJSON `json:"compartments"`
	Union        changeJSON   `json:"union"`
	App          figureJSON   `json:"application_privilege"`
	Seccomp      figureJSON   `json:"seccomp_privilege"`
	Reduction    figureJSON   `json:"reduction_percent"`
	// Serving is the serving phase's figures, when either file has
	// phases.
	Serving *servingDiffJSON `json:"serving,omitempty"`
}

// changeJSON is a compartment's change; a privilege is null in a file
// without the compartment.
type changeJSON struct {
	Name    string   `json:"name"`
	Old     *int     `json:"old_privilege"`
	New     *int     `json:"new_privilege"`
	Change  int      `json:"change"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	// Serving is the change in the serving phase, when either file has
	// phases.
	Serving *phaseChangeJSON `json:"serving,omitempty"`
}

type phaseChangeJSON struct {
	Old     *int     `json:"old_privilege"`
	New     *int     `json:"new_privilege"`
	Change  int      `json:"change"`
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

type servingDiffJSON struct {
	App             figureJSON `json:"application_privilege"`
	Seccomp         figureJSON `json:"seccomp_privilege"`
	Reduction       figureJSON `json:"reduction_percent"`
	PhasedReduction figureJSON `json:"phased_reduction_percent"`
}

type figureJSON struct {
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
}

func writeDiffJSON(w io.Writer, old, new *privilege.Allowlists, d privilege.Diff, rankingName string) error {
	out := diffJSON{
		Old:       old.Source,
		New:       new.Source,
		Ranking:   rankingName,
		Union:     changeOf(d.Union, d.Phased()),
		App:       figure(float64(d.Old.App()), float64(d.New.App())),
		Seccomp:   figure(float64(d.Old.Seccomp()), float64(d.New.Seccomp())),
		Reduction: figure(d.Old.Reduction(), d.New.Reduction()),
	}
	for _, c := range d.Compartments {
		out.Compartments = append(out.Compartments, changeOf(c, d.Phased()))
	}
	if d.Phased() {
		out.Serving = &servingDiffJSON{
			App:             figure(float64(d.Old.AppServing()), float64(d.New.AppServing())),
			Seccomp:         figure(float64(d.Old.SeccompServing()), float64(d.New.SeccompServing())),
			Reduction:       figure(d.Old.ServingReduction(), d.New.ServingReduction()),
			PhasedReduction: figure(d.Old.PhasedReduction(), d.New.PhasedReduction()),
		}
	}
	return writeJSON(w, out)
}

func changeOf(c privilege.Change, phased bool) changeJSON {
	out := changeJSON{
		Name:    c.Name(),
		Old:     privilegeOf(c.Old),
		New:     privilegeOf(c.New),
		Change:  c.Delta(),
		Added:   append([]string{}, c.Added...), // [] rather than null
		Removed: append([]string{}, c.Removed...),
	}
	if phased {
		out.Serving = &phaseChangeJSON{
			Old:     servingPrivilegeOf(c.Old),
			New:     servingPrivilegeOf(c.New),
			Change:  c.ServingDelta(),
			Added:   append([]string{}, c.ServingAdded...),
			Removed: append([]string{}, c.ServingRemoved...),
		}
	}
	return out
}

func privilegeOf(s *privilege.Scored) *int {
	if s == nil {
		return nil
	}
	return &s.Privilege
}

func servingPrivilegeOf(s *privilege.Scored) *int {
	if s == nil {
		return nil
	}
	return &s.ServingPrivilege
}

func figure(old, new float64) figureJSON { return figureJSON{Old: old, New: new, Change: new - old} }
